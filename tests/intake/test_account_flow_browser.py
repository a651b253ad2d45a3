"""The community flow end to end in Debian's Chromium (Playwright) against the live
server: sign up, confirm from the email outbox, register a rig, copy its token,
submit a run with it, see it pending, staff approve it, see it ranked."""

from __future__ import annotations

import json
import re

import pytest
import requests
from django.contrib.auth.models import User

from tests.fixtures.api import api_run_payload

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
PASSWORD = "a-long-pass-phrase-91"


def test_a_visitor_signs_up_registers_a_rig_and_is_ranked_after_review(
    browser_page, chromium, live_server, mailoutbox, screenshot_dir
):
    page = browser_page
    page.goto(f"{live_server.url}/accounts/signup/")
    page.fill("input[name=email]", "owner@example.org")
    page.fill("input[name=password1]", PASSWORD)
    page.fill("input[name=password2]", PASSWORD)
    page.click("form button[type=submit]")
    page.wait_for_load_state()

    # Not confirmed yet: the log-in is refused and says why (a confirmation mail is pending).
    assert len(mailoutbox) == 1
    link = re.search(r"https?://\S+/accounts/confirm-email/\S+/", mailoutbox[0].body).group(0)
    page.goto(link)
    page.click("form button[type=submit]")
    page.wait_for_load_state()
    page.goto(f"{live_server.url}/accounts/login/")
    if "/me/rigs/" not in page.url:
        page.fill("input[name=login]", "owner@example.org")
        page.fill("input[name=password]", PASSWORD)
        page.click("form button[type=submit]")
    page.wait_for_url(re.compile(r".*/me/rigs/$"))

    page.click("#register-rig")
    page.fill("input[name=name]", "community-rig")
    page.fill("textarea[name=gpus]", "RTX 5090:32:1:575")
    page.fill("input[name=cpu]", "Ryzen 9 9950X")
    page.click("#rig-form button[type=submit]")
    token = page.inner_text("#new-token").strip()
    page.screenshot(path=str(screenshot_dir / "intake-token-once.png"))
    assert len(token) > 20

    body = api_run_payload(rig="community-rig")
    posted = requests.post(
        f"{live_server.url}/api/runs/",
        data=json.dumps(body),
        headers={"Authorization": f"Token {token}", "Content-Type": "application/json"},
        timeout=30,
    )
    assert posted.status_code == 201, posted.text

    page.click("#back-to-rigs")
    section = page.inner_text("#rig-community-rig")
    assert "pending review" in section
    assert "space-invaders-html" in section  # the owner sees the run
    page.goto(f"{live_server.url}/")
    assert "community-rig" not in page.inner_text("#leaderboard")  # the public does not, yet

    User.objects.create_superuser("staff", "staff@example.org", PASSWORD)
    staff = chromium.new_context().new_page()
    staff.goto(f"{live_server.url}/admin/login/")
    staff.fill("input[name=username]", "staff")
    staff.fill("input[name=password]", PASSWORD)
    staff.click("input[type=submit]")
    staff.goto(f"{live_server.url}/admin/intake/rigownership/?rig__review_status__exact=pending")
    staff.check("input[name=_selected_action]")
    staff.select_option("select[name=action]", "approve")
    staff.click("button[name=index]")
    staff.wait_for_load_state()
    staff.context.close()

    page.goto(f"{live_server.url}/")
    assert "community-rig" in page.inner_text("#leaderboard")
    page.screenshot(path=str(screenshot_dir / "intake-ranked-after-review.png"))
    page.goto(f"{live_server.url}/me/rigs/")
    assert "pending review" not in page.inner_text("#rig-community-rig")

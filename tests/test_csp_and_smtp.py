"""The Content-Security-Policy header the site's own pages pass (no inline script,
Plotly and Swagger UI from our own files), checked in a real browser, and the SMTP
settings read from the environment (issue 22)."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from django.core.mail import get_connection

from tests.fixtures.boards import samples_from, sweep_points
from tests.test_settings import ROOT, _env, _load

INLINE_SCRIPT = re.compile(rb"<script(?![^>]*\bsrc=)(?![^>]*application/json)[^>]*>")


@pytest.mark.django_db
@pytest.mark.parametrize("url", ["/", "/api/runs/", "/api/docs/", "/accounts/login/", "/campaigns/"])
def test_every_answer_carries_the_policy_and_pages_have_no_inline_script(client, url):
    response = client.get(url)
    policy = response["Content-Security-Policy"]
    assert "script-src 'self'" in policy and "unsafe-inline" not in policy.split("script-src")[1].split(";")[0]
    assert "object-src 'none'" in policy and "frame-ancestors 'none'" in policy
    assert not INLINE_SCRIPT.search(response.content), INLINE_SCRIPT.search(response.content)


@pytest.mark.django_db
def test_swagger_uis_start_up_script_is_a_file(client):
    script = client.get("/api/docs/?script=")
    assert script.status_code == 200 and b"SwaggerUIBundle" in script.content


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_the_pages_run_under_the_policy_without_a_console_error(live_server, browser_page, board_run):
    """browser_page fails the test on any console error: a CSP violation is one."""
    run = board_run(samples=samples_from([40.1, 40.5, 40.2]), sweep=sweep_points())
    page = browser_page
    for path in ("/", f"/runs/{run.pk}/", "/api/docs/", "/accounts/login/"):
        response = page.goto(live_server.url + path)
        assert "script-src 'self'" in response.headers["content-security-policy"]
    page.goto(f"{live_server.url}/runs/{run.pk}/")
    page.locator("[data-drawn=true]").first.wait_for(state="attached", timeout=20_000)
    page.goto(live_server.url + "/api/docs/")
    page.wait_for_selector(".swagger-ui .opblock", timeout=20_000)


def test_smtp_settings_come_from_the_environment(settings):
    code = (
        "from leaderboard import settings as s\n"
        "print(s.EMAIL_HOST, s.EMAIL_PORT, s.EMAIL_HOST_USER, s.EMAIL_HOST_PASSWORD, s.EMAIL_USE_TLS)\n"
    )
    env = _env(EMAIL_HOST="smtp.example.org", EMAIL_PORT="587", EMAIL_HOST_USER="mailer",
               EMAIL_HOST_PASSWORD="s3cret", EMAIL_USE_TLS="true")  # fmt: skip
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["smtp.example.org", "587", "mailer", "s3cret", "True"]
    # Django's SMTP backend takes them as they are.
    settings.EMAIL_HOST, settings.EMAIL_PORT, settings.EMAIL_USE_TLS = "smtp.example.org", 587, True
    connection = get_connection("django.core.mail.backends.smtp.EmailBackend")
    assert (connection.host, connection.port, connection.use_tls) == ("smtp.example.org", 587, True)


def test_a_bad_smtp_setting_stops_startup_naming_it():
    result = _load(EMAIL_PORT="submission")
    assert result.returncode != 0 and "EMAIL_PORT must be an integer" in result.stderr
    both = _load(EMAIL_USE_TLS="true", EMAIL_USE_SSL="true")
    assert both.returncode != 0 and "EMAIL_USE_TLS and EMAIL_USE_SSL" in both.stderr

"""The owner's pages tell a rig what to run: the page that shows a new token once lists
the four commands with the site's URL, the rig and that token filled in (read back here
by the runner's own command-line parser), and "My rigs" shows each rig's last contact."""

from __future__ import annotations

import html
import re
import shlex

import pytest
from django.test import Client
from rest_framework.test import APIClient

from leaderboard.intake.owners import owned_rig_register
from leaderboard.results.services.rigs import GpuSpec
from runners import cli
from runners.onboard.service import parse_site_line
from tests.intake.test_review import confirmed_user

pytestmark = pytest.mark.django_db


def shown_commands(page: str) -> list[str]:
    block = re.search(r'<pre id="rig-commands"><code>(.*?)</code></pre>', page, re.DOTALL)
    assert block is not None, page
    return [html.unescape(line) for line in block.group(1).strip().splitlines()]


def test_a_new_token_comes_with_the_commands_filled_in(settings):
    settings.RIGBOARD_RUNNER_SOURCE = "git+https://example.org/rigboard.git#subdirectory=runners"
    user = confirmed_user()
    client = Client()
    client.force_login(user)
    rig, _ = owned_rig_register(owner=user, name="owner's rig", gpus=[GpuSpec(model="RTX 4090")], cpu="Ryzen")
    response = client.post(f"/me/rigs/{rig.pk}/tokens/", {"label": "the rig"})
    assert response.status_code == 200
    raw = response.context["raw_token"]
    page = response.content.decode()
    install, init, doctor, run = shown_commands(page)
    assert install == "pipx install 'git+https://example.org/rigboard.git#subdirectory=runners'"
    args = cli._parser().parse_args(shlex.split(init)[1:])
    assert (args.command, args.url, args.token, args.rig) == ("init", "http://testserver", raw, "owner's rig")
    assert (doctor, run) == ("rigboard-runner doctor", "rigboard-runner run")
    line = re.search(r'<code id="site-line">(.*?)</code>', page)
    assert line is not None
    assert parse_site_line(html.unescape(line.group(1))) == {"url": "http://testserver", "token": raw}
    # Shown once: the list of rigs has its prefix only.
    assert raw not in client.get("/me/rigs/").content.decode()


def test_my_rigs_shows_the_last_contact():
    user = confirmed_user()
    rig, raw = owned_rig_register(owner=user, name="quiet-rig", gpus=[GpuSpec(model="RTX 4090")], cpu="Ryzen")
    client = Client()
    client.force_login(user)
    assert "Last contact: never" in client.get("/me/rigs/").content.decode()
    rig_client = APIClient()
    rig_client.credentials(HTTP_AUTHORIZATION=f"Token {raw}")
    assert rig_client.get("/api/whoami/").status_code == 200
    contacted = rig.tokens.get().last_used_at
    page = client.get("/me/rigs/").content.decode()
    assert f"Last contact: {contacted:%Y-%m-%d %H:%M} UTC" in page

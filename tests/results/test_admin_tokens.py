"""The admin: issuing a rig's API token (raw shown once, hash stored) and revoking it."""

from __future__ import annotations

import re

import pytest
from django.contrib.messages import get_messages

from leaderboard.results.models import Rig, RigToken
from leaderboard.results.models.rigs import hash_token
from leaderboard.results.services.rigs import GpuSpec, rig_create, rig_token_issue

pytestmark = pytest.mark.django_db


@pytest.fixture
def rig(db):
    return rig_create(name="olares-one", gpus=[GpuSpec(model="RTX 5090 Mobile", vram_gb=24)])


def test_the_issue_action_shows_the_raw_token_once_and_stores_its_hash(admin_client, rig):
    response = admin_client.post(
        "/admin/results/rig/", {"action": "issue_token", "_selected_action": [rig.pk]}, follow=True
    )
    assert response.status_code == 200
    shown = [str(m) for m in response.context["messages"]]
    found = re.search(r"(rb_\S+)$", shown[0])
    assert found, shown
    raw = found.group(1)
    token = RigToken.objects.get(rig=rig)
    assert token.key_hash == hash_token(raw)
    assert raw not in (token.prefix, token.label)
    assert raw in response.content.decode()

    again = admin_client.get("/admin/results/rig/")
    assert raw not in again.content.decode()
    assert not list(get_messages(again.wsgi_request))
    page = admin_client.get(f"/admin/results/rig/{rig.pk}/change/").content.decode()
    assert raw not in page and token.prefix in page


def test_an_issued_token_submits_runs_and_a_revoked_one_does_not(admin_client, rig, client):
    token, raw = rig_token_issue(rig=rig)
    response = client.post("/api/runs/", data="{}", content_type="application/json", HTTP_AUTHORIZATION=f"Token {raw}")
    assert response.status_code == 400  # authenticated; the body is what is wrong
    admin_client.post("/admin/results/rigtoken/", {"action": "revoke", "_selected_action": [token.pk]})
    token.refresh_from_db()
    assert token.revoked_at is not None
    response = client.post("/api/runs/", data="{}", content_type="application/json", HTTP_AUTHORIZATION=f"Token {raw}")
    assert response.status_code == 401


def test_the_rig_action_revokes_every_token_of_the_rig(admin_client, rig):
    rig_token_issue(rig=rig)
    rig_token_issue(rig=rig)
    admin_client.post("/admin/results/rig/", {"action": "revoke_tokens", "_selected_action": [rig.pk]})
    assert RigToken.objects.active().filter(rig=rig).count() == 0


def test_tokens_cannot_be_added_by_hand_in_the_admin(admin_client, rig):
    assert admin_client.get("/admin/results/rigtoken/add/").status_code == 403


@pytest.mark.parametrize(
    "url",
    [
        "/admin/results/rig/",
        "/admin/results/rig/add/",
        "/admin/results/rigtoken/",
        "/admin/results/run/",
        "/admin/results/stack/",
        "/admin/results/modelfile/",
        "/admin/results/configuration/",
        "/admin/results/workload/",
        "/admin/results/source/",
        "/admin/results/publishedcomparison/",
        "/admin/results/publishedexperiment/",
        "/admin/results/publishedfit/",
    ],
)
def test_every_admin_page_renders(admin_client, make_run, url):
    make_run(rig=Rig.objects.filter(name="test-rig").first())
    assert admin_client.get(url).status_code == 200


def test_a_run_change_page_renders_with_its_samples(admin_client, make_run):
    run = make_run()
    response = admin_client.get(f"/admin/results/run/{run.pk}/change/")
    assert response.status_code == 200
    assert "decode_tokens_per_s_server" in response.content.decode()

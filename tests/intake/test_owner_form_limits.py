"""The owners' web forms meet the API's limits (issue 22): the account write limit
counts their POSTs (token issue, rig registration, llama-bench upload), an account
holds a bounded number of rigs and live tokens, and an upload is held to the API's
file size limit, read no further than it."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from leaderboard.intake import owners
from leaderboard.intake.models import RigOwnership
from leaderboard.results.models import RigToken, Run

pytestmark = pytest.mark.django_db
FILE = (Path(__file__).resolve().parents[1] / "fixtures" / "llama_bench" / "gemma-cpu.json").read_bytes()


@pytest.fixture
def owner():
    user = User.objects.create_user("owner-limits", password="pw-owner-123")
    client = Client()
    client.force_login(user)
    rig, _ = owners.owned_rig_register(owner=user, name="limits-rig", gpus=[])
    return user, client, rig


def register(client: Client, name: str):
    return client.post(reverse("owners:rig-register"), {"name": name, "gpus": ""})


def test_token_issues_count_against_the_account_write_limit(redis_cache, owner):
    _, client, rig = owner
    url = reverse("owners:token-issue", args=[rig.pk])
    assert [client.post(url, {"label": f"t{i}"}).status_code for i in range(2)] == [200, 200]
    refused = client.post(url, {"label": "one too many"})
    assert refused.status_code == 429 and int(refused["Retry-After"]) > 0
    assert RigToken.objects.filter(rig=rig).count() == 3  # the first token and two issued


def test_registrations_and_uploads_count_against_the_account_write_limit(redis_cache, owner):
    _, client, rig = owner
    assert register(client, "second-rig").status_code == 200
    upload = reverse("owners:llama-bench-upload", args=[rig.pk])
    assert client.post(upload, {"file": SimpleUploadedFile("b.json", FILE)}).status_code == 200
    assert register(client, "third-rig").status_code == 429
    assert client.post(upload, {"file": SimpleUploadedFile("b.json", FILE)}).status_code == 429
    assert RigOwnership.objects.count() == 2


def test_an_account_holds_at_most_its_share_of_rigs(settings, owner):
    settings.RIGBOARD_MAX_RIGS_PER_ACCOUNT = 1
    _, client, _ = owner
    response = register(client, "one-more")
    assert "at most 1 rigs" in response.content.decode()
    assert RigOwnership.objects.count() == 1


def test_an_account_holds_at_most_its_share_of_live_tokens(settings, owner):
    settings.RIGBOARD_MAX_LIVE_TOKENS_PER_ACCOUNT = 2
    _, client, rig = owner
    url = reverse("owners:token-issue", args=[rig.pk])
    assert client.post(url, {"label": "second"}).status_code == 200
    refused = client.post(url, {"label": "third"})
    assert refused.status_code == 403 and "revoke one first" in refused.content.decode()
    first = RigToken.objects.filter(rig=rig).order_by("created_at").first()
    assert client.post(reverse("owners:token-revoke", args=[rig.pk, first.pk])).status_code == 302
    assert client.post(url, {"label": "third"}).status_code == 200
    assert "revoke one first" in register(client, "needs-a-token").content.decode()


def test_an_upload_over_the_apis_file_limit_is_a_413(settings, owner):
    settings.RIGBOARD_LLAMA_BENCH_MAX_BYTES = len(FILE) // 2
    _, client, rig = owner
    upload = reverse("owners:llama-bench-upload", args=[rig.pk])
    response = client.post(upload, {"file": SimpleUploadedFile("b.json", FILE)})
    assert response.status_code == 413 and "over the limit" in response.content.decode()
    huge = client.post(upload, {"file": SimpleUploadedFile("b.json", b" " * (len(FILE) + 200_000))})
    assert huge.status_code == 413
    assert Run.objects.count() == 0

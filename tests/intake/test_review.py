"""Community rigs: pending until staff approve, rejected with a reason the owner
sees, disputed runs marked; owners' token pages and the llama-bench upload form."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from allauth.account.models import EmailAddress
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from rest_framework.test import APIClient

from leaderboard.core.errors import ApplicationError
from leaderboard.intake.models import ReviewStatus, RigOwnership, RunDispute
from leaderboard.intake.owners import owned_rig_register, rig_review, run_dispute
from leaderboard.results.models import Run
from leaderboard.results.services.rigs import GpuSpec
from tests.fixtures.api import api_run_payload, post_json

pytestmark = pytest.mark.django_db
FILES = Path(__file__).resolve().parents[1] / "fixtures" / "llama_bench"
PASSWORD = "a-long-pass-phrase-91"


def confirmed_user(email: str = "owner@example.org") -> User:
    user = User.objects.create_user(email, email, PASSWORD)
    EmailAddress.objects.create(user=user, email=email, verified=True, primary=True)
    return user


def owner_rig(user: User, name: str = "owned-rig") -> tuple[Run | None, str]:
    rig, raw = owned_rig_register(owner=user, name=name, gpus=[GpuSpec(model="RTX 4090")], cpu="Ryzen")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {raw}")
    assert post_json(client, "/api/runs/", api_run_payload(rig=name)).status_code == 201
    return Run.objects.filter(rig=rig).first(), raw


def test_an_unconfirmed_account_cannot_log_in(mailoutbox):
    client = Client()
    client.post("/accounts/signup/", {"email": "new@example.org", "password1": PASSWORD, "password2": PASSWORD})
    client.logout()
    response = client.post("/accounts/login/", {"login": "new@example.org", "password": PASSWORD}, follow=True)
    assert not response.context["user"].is_authenticated
    assert response.redirect_chain[-1][0].endswith("/accounts/confirm-email/")
    assert len(mailoutbox) >= 1


def test_a_pending_rigs_runs_are_out_of_public_lists_until_approved(api_client):
    user = confirmed_user()
    run, _ = owner_rig(user)
    assert RigOwnership.objects.get(rig=run.rig).review_status == ReviewStatus.PENDING
    assert api_client.get("/api/runs/").json()["count"] == 0
    assert api_client.get("/api/rigs/").json()["count"] == 0
    assert "owned-rig" not in Client().get("/").context["view"].rows.__repr__()

    rig_review(ownership=run.rig.ownership, approve=True, reviewer=User.objects.create_user("staff", is_staff=True))

    assert [r["uuid"] for r in api_client.get("/api/runs/").json()["results"]] == [str(run.uuid)]
    assert api_client.get("/api/rigs/").json()["count"] == 1


def test_a_rejection_needs_a_reason_and_the_owner_reads_it():
    user = confirmed_user()
    run, _ = owner_rig(user)
    staff = User.objects.create_user("staff", is_staff=True)
    with pytest.raises(ApplicationError):
        rig_review(ownership=run.rig.ownership, approve=False, reviewer=staff, reason=" ")
    rig_review(ownership=run.rig.ownership, approve=False, reviewer=staff, reason="GPU list does not match the runs")
    client = Client()
    client.force_login(user)
    page = client.get("/me/rigs/").content.decode()
    assert "Rejected: GPU list does not match the runs" in page
    assert APIClient().get("/api/runs/").json()["count"] == 0


def test_a_run_disputed_in_the_admin_shows_the_reason(admin_client, admin_user):
    user = confirmed_user()
    run, _ = owner_rig(user)
    # Only an approved rig's run is public (a pending one answers 404: test_hidden_until_approved).
    rig_review(ownership=run.rig.ownership, approve=True, reviewer=admin_user)
    response = admin_client.post(
        "/admin/intake/rundispute/add/", {"run": run.pk, "reason": "decode figure is 3x the GPU's bandwidth bound"}
    )
    assert response.status_code == 302, response.content.decode()[-2000:]
    page = Client().get(f"/runs/{run.pk}/").content.decode()
    assert "Disputed:" in page and "3x the GPU&#x27;s bandwidth bound" in page
    assert RunDispute.objects.get(run=run).created_by == admin_user
    # One dispute per run: a second is refused by the form; the reason is changed on the first.
    again = admin_client.post("/admin/intake/rundispute/add/", {"run": run.pk, "reason": "a mistake in the card"})
    assert again.status_code == 200 and RunDispute.objects.filter(run=run).count() == 1
    dispute = RunDispute.objects.get(run=run)
    changed = admin_client.post(f"/admin/intake/rundispute/{dispute.pk}/change/", {"reason": "a mistake in the card"})
    assert changed.status_code == 302 and RunDispute.objects.get(run=run).reason == "a mistake in the card"
    with pytest.raises(ApplicationError):
        run_dispute(run=run, reason="  ", staff=admin_user)


def test_an_owner_issues_and_revokes_tokens_of_their_own_rig_only():
    user = confirmed_user()
    run, first_raw = owner_rig(user)
    client = Client()
    client.force_login(user)
    page = client.post(f"/me/rigs/{run.rig.pk}/tokens/", {"label": "laptop"})
    assert page.status_code == 200 and page.context["raw_token"] != first_raw
    token = run.rig.tokens.get(label="laptop")
    assert client.post(f"/me/rigs/{run.rig.pk}/tokens/{token.pk}/revoke/").status_code == 302
    token.refresh_from_db()
    assert token.revoked_at is not None
    revoked = APIClient()
    revoked.credentials(HTTP_AUTHORIZATION=f"Token {page.context['raw_token']}")
    assert post_json(revoked, "/api/runs/", api_run_payload(rig="owned-rig")).status_code == 401
    # Another account cannot touch this rig.
    other = Client()
    other.force_login(confirmed_user("other@example.org"))
    assert other.post(f"/me/rigs/{run.rig.pk}/tokens/", {"label": "x"}).status_code == 404
    assert other.get(f"/me/rigs/{run.rig.pk}/edit/").status_code == 404


def test_the_upload_form_imports_a_file_and_shows_the_rows_errors():
    user = confirmed_user()
    run, _ = owner_rig(user)
    client = Client()
    client.force_login(user)
    url = f"/me/rigs/{run.rig.pk}/llama-bench/"
    with (FILES / "gemma-cpu.json").open("rb") as handle:
        ok = client.post(url, {"file": handle})
    assert ok.status_code == 200 and ok.context["result"].created == 4
    rows = json.loads((FILES / "gemma-cpu.json").read_text())
    rows[1]["model_type"] = "<b>gemma</b>"
    refused = client.post(url, {"file": SimpleUploadedFile("bench.json", json.dumps(rows).encode())})
    assert refused.status_code == 400
    assert "rows.1.model_type" in refused.context["errors"]
    assert Run.objects.filter(rig=run.rig).count() == 5


def test_registering_needs_a_signed_in_account():
    response = Client().get("/me/rigs/new/")
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]

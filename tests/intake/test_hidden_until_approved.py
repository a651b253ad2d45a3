"""The review state is the rig's own (issue 21): removing its ownership or its owner,
or any admin action but Approve, leaves a pending or rejected rig hidden; the owner
sees the "pending review" note and a rejection's reason; approval shows it all at once."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.db.models import ProtectedError
from django.test import Client
from rest_framework.test import APIClient

from leaderboard.intake.models import RigOwnership
from leaderboard.intake.owners import rig_review
from leaderboard.results.models import ReviewStatus, Rig, Run
from tests.intake.test_review import confirmed_user, owner_rig

pytestmark = pytest.mark.django_db


def _public_addresses(run: Run) -> list[str]:
    return [f"/runs/{run.pk}/", f"/rigs/{run.rig_id}/", f"/api/runs/{run.uuid}/", f"/api/rigs/{run.rig.name}/"]


def _statuses(client: Client, run: Run) -> list[int]:
    return [client.get(path).status_code for path in _public_addresses(run)]


@pytest.fixture
def staff_client() -> Client:
    client = Client()
    client.force_login(User.objects.create_superuser("staff", "staff@example.org", "a-long-pass-phrase-91"))
    return client


def test_a_community_rig_is_registered_pending_and_a_staff_made_rig_approved(make_rig):
    run, _ = owner_rig(confirmed_user())
    assert run.rig.review_status == ReviewStatus.PENDING
    assert make_rig(name="staff-rig").review_status == ReviewStatus.APPROVED
    assert list(Rig.objects.public()) == [Rig.objects.get(name="staff-rig")]


def test_a_pending_rig_answers_404_to_the_public_and_200_to_its_owner_and_staff(staff_client):
    user = confirmed_user()
    run, _ = owner_rig(user)
    assert _statuses(Client(), run) == [404, 404, 404, 404]
    other = Client()
    other.force_login(confirmed_user("other@example.org"))
    assert _statuses(other, run) == [404, 404, 404, 404]
    owner = Client()
    owner.force_login(user)
    # The API authenticates by rig token only: the owner reads the API with the rig's token.
    assert _statuses(owner, run)[:2] == [200, 200]
    assert "Pending review:" in owner.get(f"/rigs/{run.rig_id}/").content.decode()
    assert _statuses(staff_client, run)[:2] == [200, 200]


def test_the_rigs_own_token_reads_its_run_and_rig_from_the_api():
    run, raw = owner_rig(confirmed_user())
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {raw}")
    assert client.get(f"/api/runs/{run.uuid}/").status_code == 200
    assert client.get(f"/api/rigs/{run.rig.name}/").json()["name"] == run.rig.name


def test_removing_the_ownership_leaves_the_rig_hidden(staff_client):
    run, _ = owner_rig(confirmed_user())
    ownership = RigOwnership.objects.get(rig=run.rig)
    # The admin offers no delete for a queue entry…
    page = staff_client.post(f"/admin/intake/rigownership/{ownership.pk}/delete/", {"post": "yes"})
    assert page.status_code == 403
    assert RigOwnership.objects.filter(pk=ownership.pk).exists()
    # …and were it deleted anyway (the shell, a cascade), the rig keeps its review state.
    ownership.delete()
    assert _statuses(Client(), run) == [404, 404, 404, 404]
    assert APIClient().get("/api/rigs/").json()["count"] == 0


def test_deleting_the_owner_is_refused_and_the_rig_stays_hidden(staff_client):
    user = confirmed_user()
    run, _ = owner_rig(user)
    page = staff_client.post(f"/admin/auth/user/{user.pk}/delete/", {"post": "yes"})
    assert page.status_code == 200 and "Cannot delete user" in page.content.decode()
    assert User.objects.filter(pk=user.pk).exists()
    with pytest.raises(ProtectedError):
        user.delete()
    assert _statuses(Client(), run) == [404, 404, 404, 404]


def test_the_rig_admin_cannot_edit_the_review_state(staff_client):
    run, _ = owner_rig(confirmed_user())
    page = staff_client.get(f"/admin/results/rig/{run.rig_id}/change/").content.decode()
    assert 'name="review_status"' not in page


def test_a_rejected_rigs_owner_reads_the_reason_and_the_public_sees_nothing(staff_client):
    user = confirmed_user()
    run, _ = owner_rig(user)
    rig_review(ownership=run.rig.ownership, approve=False, reviewer=user, reason="the GPU list does not match")
    owner = Client()
    owner.force_login(user)
    for path in (f"/runs/{run.pk}/", f"/rigs/{run.rig_id}/"):
        assert "<strong>Rejected:</strong>" in owner.get(path).content.decode()
        assert "the GPU list does not match" in owner.get(path).content.decode()
    assert _statuses(Client(), run) == [404, 404, 404, 404]


def test_approval_shows_everything_at_once(staff_client):
    run, _ = owner_rig(confirmed_user())
    ownership = RigOwnership.objects.get(rig=run.rig)
    staff_client.post(
        "/admin/intake/rigownership/", {"action": "approve", "_selected_action": [ownership.pk], "index": "0"}
    )
    run.rig.refresh_from_db()
    assert run.rig.review_status == ReviewStatus.APPROVED
    assert _statuses(Client(), run) == [200, 200, 200, 200]
    assert "Pending review" not in Client().get(f"/runs/{run.pk}/").content.decode()

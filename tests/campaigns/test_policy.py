"""Who may open a campaign, write to one, and see one (services.py, selectors.py),
checked at the service and through the API that answers its refusals; the admin
creating a campaign through the same services; a trial's job that ends moving
its service campaign on (jobs.services calls campaigns after the commit)."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import AnonymousUser, User
from django.http import Http404

from leaderboard.campaigns.models import Campaign
from leaderboard.campaigns.selectors import campaign_get_visible, campaign_list_public
from leaderboard.campaigns.services import campaign_create, campaign_for_writer, campaign_open
from leaderboard.core.errors import ApplicationError
from leaderboard.jobs.models import BenchmarkJob
from leaderboard.jobs.services import job_status_update
from leaderboard.results.models import ReviewStatus
from tests.fixtures.api import post_json

pytestmark = pytest.mark.django_db

SPEC = {"name": "threads", "strategy": "grid", "space": {"threads": [1, 2]}, "repetitions": 1}
BASE = {"server": {"model": "/m.gguf"}, "workload": {"max_tokens": 16}}


def test_a_rigs_token_naming_another_rig_is_refused_with_a_403_naming_rig(make_rig_with_token):
    mine, other = make_rig_with_token("mine"), make_rig_with_token("other")
    with pytest.raises(ApplicationError) as refused:
        campaign_open(data={**SPEC, "rig": "other"}, token_rig_id=mine.rig.pk)
    assert (refused.value.field, refused.value.status_code) == ("rig", 403)
    response = post_json(mine.client, "/api/campaigns/", {**SPEC, "rig": other.rig.name})
    assert response.status_code == 403 and response.json()["errors"] == {"rig": ["this token is for rig 'mine'"]}
    assert Campaign.objects.count() == 0


def test_staff_must_name_a_rig_that_exists(staff_client):
    with pytest.raises(ApplicationError) as refused:
        campaign_open(data=SPEC, token_rig_id=None)
    assert (refused.value.field, refused.value.status_code) == ("rig", 400)
    response = post_json(staff_client, "/api/campaigns/", {**SPEC, "rig": "nowhere", "base_config": BASE})
    assert response.status_code == 400 and response.json()["errors"] == {"rig": ["no rig named 'nowhere'"]}


def test_a_campaign_the_service_runs_needs_the_server_section_and_nothing_is_stored(make_rig_with_token):
    rig = make_rig_with_token("svc").rig
    attached = {**SPEC, "base_config": {"attach": {"url": "http://127.0.0.1:8080"}}}  # a server started elsewhere
    with pytest.raises(ApplicationError) as refused:
        campaign_create(rig=rig, data=attached, origin="service")
    assert (refused.value.field, refused.value.message) == (
        "base_config",
        "required: the rig config with its [server] section",
    )
    assert Campaign.objects.count() == 0
    assert campaign_create(rig=rig, data=attached).origin == "terminal"  # the rig's CLI may attach


def test_only_staff_and_the_campaigns_own_rig_may_write_to_it(make_rig_with_token):
    mine, other = make_rig_with_token("mine"), make_rig_with_token("other")
    campaign = campaign_create(rig=mine.rig, data=SPEC)
    assert campaign_for_writer(campaign_id=campaign.pk, staff=False, token_rig_id=mine.rig.pk) == campaign
    assert campaign_for_writer(campaign_id=campaign.pk, staff=True, token_rig_id=None) == campaign
    with pytest.raises(ApplicationError) as refused:
        campaign_for_writer(campaign_id=campaign.pk, staff=False, token_rig_id=other.rig.pk)
    assert (refused.value.field, refused.value.status_code) == ("detail", 403)
    with pytest.raises(Http404):
        campaign_for_writer(campaign_id=campaign.pk + 1, staff=True, token_rig_id=None)
    response = post_json(other.client, f"/api/campaigns/{campaign.pk}/finish/", {"status": "finished"})
    assert response.status_code == 403 and "detail" in response.json()["errors"]
    campaign.refresh_from_db()
    assert campaign.status == "running"


def test_a_hidden_rigs_campaign_is_seen_by_staff_and_its_token_only(make_rig_with_token):
    hidden, public = make_rig_with_token("hidden"), make_rig_with_token("public")
    hidden.rig.review_status = ReviewStatus.PENDING
    hidden.rig.save(update_fields=["review_status"])
    secret = campaign_create(rig=hidden.rig, data=SPEC)
    shown = campaign_create(rig=public.rig, data=SPEC)
    assert campaign_list_public() == [shown]
    with pytest.raises(Http404):
        campaign_get_visible(campaign_id=secret.pk, viewer=AnonymousUser())
    with pytest.raises(Http404):
        campaign_get_visible(campaign_id=secret.pk, viewer=AnonymousUser(), token_rig_id=public.rig.pk)
    assert campaign_get_visible(campaign_id=secret.pk, viewer=AnonymousUser(), token_rig_id=hidden.rig.pk) == secret
    staff = User.objects.create_user("ops2", is_staff=True)
    assert campaign_get_visible(campaign_id=secret.pk, viewer=staff) == secret


@pytest.fixture
def superuser_client(client):
    client.force_login(User.objects.create_superuser("boss", "boss@example.com", "pw-boss-123"))
    return client


def test_the_admin_creates_a_campaign_through_the_service_and_refuses_a_bad_spec_on_its_form(
    superuser_client, make_rig_with_token
):
    rig = make_rig_with_token("admin-rig").rig
    ranged = {**SPEC, "space": {"threads": {"min": 1, "max": 4}}}
    form = {"rig": rig.pk, "name": "admin threads", "spec": json.dumps(ranged), "base_config": json.dumps(BASE)}
    form["origin"] = "terminal"
    bad = {**form, "spec": json.dumps({**SPEC, "space": {"threads": {"min": 1, "max": 4, "step": 0}}})}
    response = superuser_client.post("/admin/campaigns/campaign/add/", bad | _inline_management())
    assert response.status_code == 200 and "space.threads.step" in response.content.decode()
    assert Campaign.objects.count() == 0

    response = superuser_client.post("/admin/campaigns/campaign/add/", form | _inline_management())
    assert response.status_code == 302, response.content.decode()[-3000:]
    campaign = Campaign.objects.get()
    # Checked and stored as the API stores it: the range expanded, the defaults filled in.
    assert campaign.name == "admin threads" and campaign.spec["space"] == {"threads": [1, 2, 3, 4]}
    assert campaign.spec["confirm_repetitions"] == 10 and campaign.origin == "terminal"

    # A stored campaign is read-only: a posted change alters nothing.
    change = {**form, "name": "renamed", "spec": json.dumps(SPEC)} | _inline_management()
    superuser_client.post(f"/admin/campaigns/campaign/{campaign.pk}/change/", change)
    campaign.refresh_from_db()
    assert campaign.name == "admin threads" and campaign.spec["space"] == {"threads": [1, 2, 3, 4]}
    assert superuser_client.get("/admin/campaigns/trial/add/").status_code == 403


def _inline_management() -> dict[str, str]:
    """The trial inline's empty formset, as the admin's page posts it."""
    counts = {"TOTAL_FORMS": "0", "INITIAL_FORMS": "0", "MIN_NUM_FORMS": "0", "MAX_NUM_FORMS": "1000"}
    return {f"trials-{name}": value for name, value in counts.items()}


def test_a_trials_job_that_ends_moves_its_campaign_on_after_the_commit(
    staff_client, make_rig_with_token, celery_broker, django_capture_on_commit_callbacks
):
    make_rig_with_token("svc-rig")
    with django_capture_on_commit_callbacks(execute=True):
        response = post_json(staff_client, "/api/campaigns/", {**SPEC, "rig": "svc-rig", "base_config": BASE})
    assert response.status_code == 201, response.json()
    campaign = Campaign.objects.get()
    (first,) = campaign.trials.all()
    assert first.job is not None

    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        # As the rig reports a server that ran out of memory: its ServerError's kind with the text.
        job_status_update(
            job=first.job, status="failed", error="failed to allocate 9 GiB", failure_kind="out_of_memory"
        )
    first.refresh_from_db()
    assert first.state == "running"  # nothing moves before the commit
    with django_capture_on_commit_callbacks(execute=True):
        for callback in callbacks:
            callback()
    first.refresh_from_db()
    assert first.state == "failed" and first.failure_kind == "out_of_memory"
    second = campaign.trials.get(number=2)
    assert second.state == "running" and second.params == {"threads": 2}
    assert BenchmarkJob.objects.count() == 2

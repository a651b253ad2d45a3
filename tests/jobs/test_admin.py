"""The admin: "queue benchmark job" form, "run again" and "abort" actions."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import User

from leaderboard.jobs.models import BenchmarkJob
from leaderboard.jobs.services import jobs_enqueue
from tests.fixtures.celery_worker import queued_messages
from tests.jobs.conftest import attach_spec

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client_(client):
    user = User.objects.create_superuser("boss", "boss@example.com", "pw-boss-123")
    client.force_login(user)
    return client


def test_add_opens_the_queue_form_with_the_rig_preselected(admin_client_, make_rig_and_token):
    rig, _ = make_rig_and_token("bench-a")
    response = admin_client_.get(f"/admin/jobs/benchmarkjob/add/?rig={rig.pk}")
    assert response.status_code == 302
    assert response["Location"].endswith(f"/admin/jobs/benchmarkjob/queue/?rig={rig.pk}")
    page = admin_client_.get(response["Location"])
    assert page.status_code == 200
    assert f'<option value="{rig.pk}" selected>bench-a</option>' in page.content.decode()


def test_the_queue_form_queues_a_job_on_the_rigs_queue(
    admin_client_, make_rig_and_token, celery_broker, django_capture_on_commit_callbacks
):
    rig, _ = make_rig_and_token("bench-a")
    form = {"rig": rig.pk, "kind": "suite", "spec": json.dumps(attach_spec()), "time_limit_s": "900"}
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client_.post("/admin/jobs/benchmarkjob/queue/", form)
    job = BenchmarkJob.objects.get()
    assert response.status_code == 302 and response["Location"].endswith(f"/admin/jobs/benchmarkjob/{job.pk}/change/")
    assert (job.rig, job.kind, job.time_limit_s, job.status, job.created_by.username) == (
        rig,
        "suite",
        900,
        "queued",
        "boss",
    )
    (message,) = queued_messages(celery_broker, "rig.bench-a")
    assert message["args"][0]["job"]["id"] == job.pk
    assert admin_client_.get(response["Location"]).status_code == 200


def test_the_queue_form_shows_the_bad_field(admin_client_, make_rig_and_token, celery_broker):
    rig, _ = make_rig_and_token("bench-a")
    form = {"rig": rig.pk, "kind": "suite", "spec": json.dumps({"workload": {"max_tokens": 16}})}
    response = admin_client_.post("/admin/jobs/benchmarkjob/queue/", form)
    assert response.status_code == 200
    assert "spec.server: give exactly one of [server] (launch) or [attach]" in response.content.decode()
    assert BenchmarkJob.objects.count() == 0


def test_run_again_and_abort_actions(
    admin_client_, make_rig_and_token, celery_broker, django_capture_on_commit_callbacks
):
    rig, _ = make_rig_and_token("bench-a")
    first = jobs_enqueue(rig=rig, kind="suite", spec=attach_spec(), time_limit_s=600)
    with django_capture_on_commit_callbacks(execute=True):
        admin_client_.post(
            "/admin/jobs/benchmarkjob/", {"action": "run_again", "_selected_action": [first.pk]}, follow=True
        )
    again = BenchmarkJob.objects.exclude(pk=first.pk).get()
    assert again.rerun_of == first and again.spec == first.spec and again.status == "queued"
    assert [m["args"][0]["job"]["id"] for m in queued_messages(celery_broker, "rig.bench-a")] == [again.pk]

    admin_client_.post("/admin/jobs/benchmarkjob/", {"action": "abort", "_selected_action": [first.pk, again.pk]})
    assert set(BenchmarkJob.objects.values_list("status", flat=True)) == {"aborted"}
    assert BenchmarkJob.objects.get(pk=again.pk).error == "aborted by boss in the admin"


def test_a_non_staff_user_cannot_open_the_queue_form(client, make_rig_and_token):
    user = User.objects.create_user("visitor", password="pw-visitor-123")
    client.force_login(user)
    response = client.get("/admin/jobs/benchmarkjob/queue/")
    assert response.status_code == 302 and "/admin/login/" in response["Location"]

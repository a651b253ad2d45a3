"""POST /api/jobs/ (staff queue a job) and GET /api/jobs/."""

from __future__ import annotations

import pytest

from leaderboard.jobs.models import BenchmarkJob
from tests.fixtures.celery_worker import queued_messages, use_broker
from tests.jobs.conftest import attach_spec, token_client

pytestmark = pytest.mark.django_db


def test_staff_queue_a_job_on_the_rigs_own_queue(
    staff_client, make_rig_and_token, celery_broker, django_capture_on_commit_callbacks
):
    rig, _ = make_rig_and_token("bench-a")
    with django_capture_on_commit_callbacks(execute=True):
        response = staff_client.post(
            "/api/jobs/", {"rig": "bench-a", "kind": "suite", "spec": attach_spec(), "time_limit_s": 600}, format="json"
        )
    assert response.status_code == 201, response.json()
    body = response.json()
    job = BenchmarkJob.objects.get()
    assert body["id"] == job.pk and body["status"] == "queued" and body["queue"] == "rig.bench-a"
    assert body["run_uuid"] == str(job.run_uuid) and body["run"] is None
    assert (job.rig, job.kind, job.time_limit_s, job.created_by.username) == (rig, "suite", 600, "ops")
    assert 0 < job.soft_time_limit_s < job.time_limit_s
    assert job.spec["sweep"]["enabled"] is False

    (message,) = queued_messages(celery_broker, "rig.bench-a")
    assert message["headers"]["task"] == "rigboard.run_benchmark"
    assert message["headers"]["id"] == job.celery_task_id
    # Celery gets the hard limit only: the rig enforces the soft one around the measuring, so
    # a prefork pool's own soft limit can never interrupt the delivery of the run.
    assert message["headers"]["timelimit"] == [600, None]
    (spec,) = message["args"]
    assert spec["job"] == {
        "id": job.pk,
        "kind": "suite",
        "rig": "bench-a",
        "run_uuid": str(job.run_uuid),
        "service_url": spec["job"]["service_url"],
        "soft_time_limit_s": job.soft_time_limit_s,
        "time_limit_s": 600,
    }
    assert spec["config"]["attach"] == {"url": "http://127.0.0.1:8080"}
    assert "service" not in spec["config"] and "rb_" not in str(spec)
    assert queued_messages(celery_broker, "celery") == []


def test_a_sweep_job_turns_the_sweep_on(
    staff_client, make_rig_and_token, celery_broker, django_capture_on_commit_callbacks
):
    make_rig_and_token("bench-a")
    spec = {**attach_spec(), "sweep": {"depths": [512, 1024]}}
    with django_capture_on_commit_callbacks(execute=True):
        response = staff_client.post("/api/jobs/", {"rig": "bench-a", "kind": "sweep", "spec": spec}, format="json")
    assert response.status_code == 201, response.json()
    job = BenchmarkJob.objects.get()
    assert job.spec["sweep"] == {"depths": [512, 1024], "enabled": True}
    (message,) = queued_messages(celery_broker, "rig.bench-a")
    assert message["args"][0]["config"]["sweep"]["enabled"] is True


def test_it_forbids_a_logged_in_non_staff_user(user_client, make_rig_and_token, celery_broker):
    make_rig_and_token("bench-a")
    response = user_client.post("/api/jobs/", {"rig": "bench-a", "spec": attach_spec()}, format="json")
    assert response.status_code == 403
    assert BenchmarkJob.objects.count() == 0
    assert queued_messages(celery_broker, "rig.bench-a") == []


def test_it_forbids_a_rig_token_from_queueing_jobs(make_rig_and_token, celery_broker):
    _, raw = make_rig_and_token("bench-a")
    response = token_client(raw).post("/api/jobs/", {"rig": "bench-a", "spec": attach_spec()}, format="json")
    assert response.status_code == 403
    assert BenchmarkJob.objects.count() == 0


def test_it_asks_an_anonymous_client_to_authenticate(client, make_rig_and_token):
    make_rig_and_token("bench-a")
    response = client.post("/api/jobs/", {"rig": "bench-a", "spec": attach_spec()}, content_type="application/json")
    assert response.status_code == 401
    assert BenchmarkJob.objects.count() == 0


def test_it_names_the_bad_field_of_a_spec(staff_client, make_rig_and_token, celery_broker):
    make_rig_and_token("bench-a")
    spec = attach_spec(repetitions=0)
    response = staff_client.post("/api/jobs/", {"rig": "bench-a", "spec": spec}, format="json")
    assert response.status_code == 400
    assert response.json() == {"errors": {"spec.workload.repetitions": ["must be at least 1"]}}
    assert BenchmarkJob.objects.count() == 0


def test_it_refuses_a_spec_that_carries_a_token(staff_client, make_rig_and_token, celery_broker):
    make_rig_and_token("bench-a")
    spec = {**attach_spec(), "service": {"token": "rb_secret"}}
    response = staff_client.post("/api/jobs/", {"rig": "bench-a", "spec": spec}, format="json")
    assert response.status_code == 400
    assert list(response.json()["errors"]) == ["spec.service"]


def test_it_refuses_an_unknown_rig_and_a_time_limit_over_the_maximum(
    staff_client, make_rig_and_token, celery_broker, settings
):
    make_rig_and_token("bench-a")
    response = staff_client.post("/api/jobs/", {"rig": "nope", "spec": attach_spec()}, format="json")
    assert response.status_code == 400 and list(response.json()["errors"]) == ["rig"]
    settings.RIGBOARD_JOB_MAX_TIME_LIMIT_S = 3600
    response = staff_client.post(
        "/api/jobs/", {"rig": "bench-a", "spec": attach_spec(), "time_limit_s": 3601}, format="json"
    )
    assert response.status_code == 400 and list(response.json()["errors"]) == ["time_limit_s"]
    assert BenchmarkJob.objects.count() == 0


@pytest.mark.django_db(transaction=True)  # as deployed: the job row commits, and is sent, within the request
def test_a_broker_that_cannot_be_reached_fails_the_job_visibly(staff_client, make_rig_and_token):
    make_rig_and_token("bench-a")
    previous = use_broker("redis://127.0.0.1:1/0")  # nothing listens on port 1
    try:
        response = staff_client.post("/api/jobs/", {"rig": "bench-a", "spec": attach_spec()}, format="json")
    finally:
        use_broker(previous)
    assert response.status_code == 503
    job = BenchmarkJob.objects.get()
    assert job.status == "failed" and "could not reach the Celery broker" in job.error
    assert f"job {job.pk} was not queued" in response.json()["errors"]["rig"][0]


def test_staff_list_jobs_and_a_rig_sees_only_its_own(
    staff_client, make_rig_and_token, celery_broker, django_capture_on_commit_callbacks
):
    _, raw_a = make_rig_and_token("bench-a")
    make_rig_and_token("bench-b")
    with django_capture_on_commit_callbacks(execute=True):
        for name in ("bench-a", "bench-b", "bench-b"):
            staff_client.post("/api/jobs/", {"rig": name, "spec": attach_spec()}, format="json")
    everything = staff_client.get("/api/jobs/").json()
    assert everything["count"] == 3
    assert staff_client.get("/api/jobs/?rig=bench-b").json()["count"] == 2
    own = token_client(raw_a).get("/api/jobs/").json()
    assert [job["rig"] for job in own["results"]] == ["bench-a"]
    other_job = BenchmarkJob.objects.filter(rig__name="bench-b").first()
    assert token_client(raw_a).get(f"/api/jobs/{other_job.pk}/").status_code == 403
    assert staff_client.get(f"/api/jobs/{other_job.pk}/").json()["id"] == other_job.pk

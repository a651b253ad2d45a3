"""POST /api/jobs/{id}/status/: the rig reports its job; staff may abort."""

from __future__ import annotations

import pytest

from leaderboard.jobs.models import BenchmarkJob
from leaderboard.jobs.services import jobs_enqueue
from leaderboard.results.services.runs import run_create
from runners.delivery.stored import stored_shortfall
from tests.fixtures.data import run_payload
from tests.jobs.conftest import attach_spec, token_client

pytestmark = pytest.mark.django_db


@pytest.fixture
def job(make_rig_and_token, celery_broker):
    rig, raw = make_rig_and_token("bench-a")
    job = jobs_enqueue(rig=rig, kind="suite", spec=attach_spec(), time_limit_s=600)
    job.raw_token = raw  # type: ignore[attr-defined]
    return job


def _post(raw, job, **body):
    return token_client(raw).post(f"/api/jobs/{job.pk}/status/", body, format="json")


def test_the_rig_reports_its_job_running_then_finished(job):
    response = _post(job.raw_token, job, status="running", attempt="t1:a", worker="bench-a@host", progress="server 1/1")
    assert response.status_code == 200, response.json()
    assert response.json()["status"] == "running" and response.json()["worker"] == "bench-a@host"
    job.refresh_from_db()
    assert (job.status, job.attempt, job.progress) == ("running", "t1:a", "server 1/1")
    assert job.started_at is not None and job.finished_at is None

    response = _post(job.raw_token, job, status="finished", attempt="t1:a", progress="run finished, posted")
    assert response.status_code == 200
    job.refresh_from_db()
    assert job.status == "finished" and job.finished_at is not None and job.error == ""


def test_a_repeated_report_from_the_same_attempt_changes_nothing_but_progress(job):
    assert _post(job.raw_token, job, status="running", attempt="t1:a").status_code == 200
    started = BenchmarkJob.objects.get().started_at
    response = _post(job.raw_token, job, status="running", attempt="t1:a", progress="repetitions 2/3")
    assert response.status_code == 200
    job.refresh_from_db()
    assert job.started_at == started and job.progress == "repetitions 2/3"


def test_a_second_attempt_cannot_start_a_running_job(job):
    assert _post(job.raw_token, job, status="running", attempt="t1:first").status_code == 200
    response = _post(job.raw_token, job, status="running", attempt="t1:second")
    assert response.status_code == 409
    assert "already started by attempt t1:first" in response.json()["errors"]["status"][0]
    job.refresh_from_db()
    assert job.status == "running" and job.attempt == "t1:first"


def test_an_ended_job_cannot_be_reopened(job):
    _post(job.raw_token, job, status="running", attempt="a")
    _post(job.raw_token, job, status="failed", attempt="a", error="ServerError: the model failed to load")
    response = _post(job.raw_token, job, status="running", attempt="b")
    assert response.status_code == 409
    job.refresh_from_db()
    assert job.status == "failed" and job.error == "ServerError: the model failed to load"


def test_another_rigs_token_cannot_touch_the_job(job, make_rig_and_token):
    _, other_raw = make_rig_and_token("bench-b")
    response = _post(other_raw, job, status="running", attempt="x")
    assert response.status_code == 403
    assert BenchmarkJob.objects.get().status == "queued"


def test_a_non_staff_user_cannot_report_status(job, user_client):
    response = user_client.post(f"/api/jobs/{job.pk}/status/", {"status": "aborted"}, format="json")
    assert response.status_code == 403
    assert BenchmarkJob.objects.get().status == "queued"


def test_staff_abort_a_queued_job_but_may_not_finish_it(job, staff_client):
    response = staff_client.post(f"/api/jobs/{job.pk}/status/", {"status": "finished"}, format="json")
    assert response.status_code == 400
    response = staff_client.post(f"/api/jobs/{job.pk}/status/", {"status": "aborted"}, format="json")
    assert response.status_code == 200
    job.refresh_from_db()
    assert job.status == "aborted" and job.error == "aborted by ops"
    # A worker that takes the message afterwards finds the job aborted.
    assert _post(job.raw_token, job, status="running", attempt="late").status_code == 409


def test_a_failed_job_closes_its_open_run(job):
    opened = run_create(rig=job.rig, **run_payload(run={"uuid": job.run_uuid, "status": "running"}, samples=[])).run
    assert opened.status == "running"
    _post(job.raw_token, job, status="running", attempt="a")
    _post(job.raw_token, job, status="aborted", attempt="b", error="worker lost; redelivered, not run twice")
    opened.refresh_from_db()
    assert opened.status == "aborted" and opened.failure_reason == "worker lost; redelivered, not run twice"
    detail = token_client(job.raw_token).get(f"/api/jobs/{job.pk}/").json()
    assert detail["run"] == {"uuid": str(job.run_uuid), "status": "aborted", "url": f"/api/runs/{job.run_uuid}/"}


def test_staff_run_a_job_again(job, staff_client, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        response = staff_client.post(f"/api/jobs/{job.pk}/run-again/")
    assert response.status_code == 201
    again = BenchmarkJob.objects.get(pk=response.json()["id"])
    assert again.rerun_of == job and again.spec == job.spec and again.time_limit_s == job.time_limit_s
    assert again.run_uuid != job.run_uuid and again.status == "queued"
    assert token_client(job.raw_token).post(f"/api/jobs/{job.pk}/run-again/").status_code == 403


def _samples(count):
    return [{"index": i, "decode_tokens_per_s_server": 100.0 + i, "tokens_generated": 16} for i in range(1, count + 1)]


def test_a_run_closed_by_staffs_abort_takes_nothing_more_from_its_runner(job, staff_client):
    # The worker learned of the abort from its job's progress report, not from a refused
    # append, so its own close says 'aborted' too, with one repetition the service never had.
    opened = run_create(
        rig=job.rig, **run_payload(run={"uuid": job.run_uuid, "status": "running"}, samples=_samples(2))
    ).run
    _post(job.raw_token, job, status="running", attempt="a")
    reason = "aborted by ops: wrong model"
    aborted = staff_client.post(f"/api/jobs/{job.pk}/status/", {"status": "aborted", "error": reason}, format="json")
    assert aborted.status_code == 200, aborted.json()
    opened.refresh_from_db()
    assert opened.status == "aborted" and opened.n_samples == 2

    rig_client = token_client(job.raw_token)
    finish = {"status": "aborted", "failure_reason": reason, "samples": _samples(3), "sweep_points": []}
    response = rig_client.post(f"/api/runs/{job.run_uuid}/finish/", finish, format="json")
    assert response.status_code == 409, response.json()
    # The whole run re-posted (the spooled document) is answered with the service's account.
    result = run_create(
        rig=job.rig,
        **run_payload(run={"uuid": job.run_uuid, "status": "aborted", "failure_reason": reason}, samples=_samples(3)),
    )
    assert not result.created and result.run.n_samples == 2
    opened.refresh_from_db()
    assert sorted(opened.samples.values_list("index", flat=True)) == [1, 2] and opened.failure_reason == reason
    # ... which the runner takes as its answer: nothing is kept to send again.
    detail = rig_client.get(f"/api/runs/{job.run_uuid}/").json()
    assert stored_shortfall({"status": "aborted", "samples": _samples(3)}, detail) == ""


def test_a_run_its_rig_aborted_still_takes_a_finish_that_ends_it_alike(job):
    # The rig's own abort (a worker lost, redelivered) is no word of the service's: a retried
    # finish that also says 'aborted' adds the samples it lacks.
    opened = run_create(
        rig=job.rig, **run_payload(run={"uuid": job.run_uuid, "status": "running"}, samples=_samples(2))
    ).run
    _post(job.raw_token, job, status="running", attempt="a")
    _post(job.raw_token, job, status="aborted", attempt="a", error="stopped by its rig")
    finish = {"status": "aborted", "failure_reason": "stopped by its rig", "samples": _samples(3), "sweep_points": []}
    response = token_client(job.raw_token).post(f"/api/runs/{job.run_uuid}/finish/", finish, format="json")
    assert response.status_code == 200, response.json()
    opened.refresh_from_db()
    assert opened.n_samples == 3


def test_the_rig_names_why_its_job_failed_with_a_known_kind_only(job):
    _post(job.raw_token, job, status="running", attempt="t1:a")
    bad = _post(job.raw_token, job, status="failed", attempt="t1:a", error="x", failure_kind="gremlins")
    assert bad.status_code == 400 and "failure_kind" in bad.json()["errors"], bad.json()
    job.refresh_from_db()
    assert job.status == "running" and job.failure_kind == ""  # nothing stored from a refused report
    response = _post(job.raw_token, job, status="failed", attempt="t1:a", error="oom", failure_kind="out_of_memory")
    assert response.status_code == 200, response.json()
    job.refresh_from_db()
    assert (job.status, job.failure_kind, job.error) == ("failed", "out_of_memory", "oom")

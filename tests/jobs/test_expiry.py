"""Queued jobs expire: a job no worker of its rig picks up within
RIGBOARD_JOB_QUEUE_TTL_S is marked expired by the sweeper, its Celery message
carries the same expiry (a worker that gets it late drops it unrun), and a rig
told the job expired does not run it."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from django.utils import timezone

from leaderboard.core.errors import ApplicationError
from leaderboard.jobs.models import BenchmarkJob
from leaderboard.jobs.services import job_abort, job_dispatch_spec, job_status_update, jobs_enqueue, jobs_sweep_stuck
from runners.tasks import run_benchmark
from tests.fixtures.celery_worker import queued_messages
from tests.fixtures.waiting import wait_until
from tests.jobs.conftest import attach_spec, token_client

pytestmark = pytest.mark.django_db


def test_a_job_expires_a_day_after_it_was_queued_by_default(make_rig_and_token, celery_broker):
    rig, _ = make_rig_and_token("bench-a")
    job = jobs_enqueue(rig=rig, kind="suite", spec=attach_spec(), time_limit_s=60)
    assert job.expires_at - job.created_at == timedelta(hours=24)


def test_the_sweeper_expires_a_queued_job_past_its_expiry_with_the_reason(make_rig_and_token, celery_broker, settings):
    settings.RIGBOARD_JOB_QUEUE_TTL_S = 2 * 60 * 60
    rig, _ = make_rig_and_token("bench-a")
    job = jobs_enqueue(rig=rig, kind="suite", spec=attach_spec(), time_limit_s=60)
    assert job.expires_at - job.created_at == timedelta(hours=2)

    assert jobs_sweep_stuck(now=job.expires_at - timedelta(seconds=1)) == []
    assert BenchmarkJob.objects.get().status == "queued"

    (changed,) = jobs_sweep_stuck(now=job.expires_at + timedelta(seconds=1))
    job.refresh_from_db()
    assert changed.pk == job.pk and job.status == "expired" and job.is_terminal
    assert job.finished_at == job.expires_at + timedelta(seconds=1) and job.started_at is None
    assert job.error.startswith("not picked up by rig bench-a within 2 h: no worker consumed rig.bench-a before")
    # Swept again, nothing changes.
    assert jobs_sweep_stuck(now=job.expires_at + timedelta(hours=1)) == []


def test_a_running_job_past_the_queue_expiry_is_not_expired(make_rig_and_token, celery_broker):
    rig, _ = make_rig_and_token("bench-a")
    job = jobs_enqueue(rig=rig, kind="suite", spec=attach_spec(), time_limit_s=60 * 60)
    job_status_update(job=job, status="running", attempt="a", worker="bench-a@host")
    # The queue's expiry has passed but the job's own time limit has not run out.
    BenchmarkJob.objects.filter(pk=job.pk).update(
        expires_at=timezone.now() - timedelta(minutes=1), started_at=timezone.now()
    )
    assert jobs_sweep_stuck() == []
    assert BenchmarkJob.objects.get().status == "running"


def test_dispatch_gives_the_celery_message_the_jobs_expiry(
    staff_client, make_rig_and_token, celery_broker, django_capture_on_commit_callbacks
):
    make_rig_and_token("bench-a")
    with django_capture_on_commit_callbacks(execute=True):
        response = staff_client.post("/api/jobs/", {"rig": "bench-a", "spec": attach_spec()}, format="json")
    assert response.status_code == 201, response.json()
    job = BenchmarkJob.objects.get()
    (message,) = queued_messages(celery_broker, "rig.bench-a")
    assert message["headers"]["expires"] == job.expires_at.isoformat()


def test_the_api_shows_the_expiry_and_the_expired_status(staff_client, make_rig_and_token, celery_broker):
    rig, raw = make_rig_and_token("bench-a")
    waiting = jobs_enqueue(rig=rig, kind="suite", spec=attach_spec())
    stale = jobs_enqueue(rig=rig, kind="suite", spec=attach_spec())
    BenchmarkJob.objects.filter(pk=stale.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    jobs_sweep_stuck()

    body = staff_client.get("/api/jobs/").json()
    rows = {row["id"]: row for row in body["results"]}
    assert rows[waiting.pk]["status"] == "queued"
    assert rows[waiting.pk]["expires_at"] == waiting.expires_at.isoformat().replace("+00:00", "Z")
    assert rows[stale.pk]["status"] == "expired" and "not picked up by rig bench-a" in rows[stale.pk]["error"]
    expired = staff_client.get("/api/jobs/?status=expired").json()["results"]
    assert [row["id"] for row in expired] == [stale.pk]
    # The rig sees the same on its own token.
    mine = token_client(raw).get(f"/api/jobs/{stale.pk}/").json()
    assert mine["status"] == "expired" and mine["expires_at"]


def test_a_rig_cannot_start_or_report_an_expired_job(make_rig_and_token, celery_broker):
    rig, raw = make_rig_and_token("bench-a")
    job = jobs_enqueue(rig=rig, kind="suite", spec=attach_spec())
    BenchmarkJob.objects.filter(pk=job.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    jobs_sweep_stuck()
    client = token_client(raw)

    started = client.post(f"/api/jobs/{job.pk}/status/", {"status": "running", "attempt": "late"}, format="json")
    assert started.status_code == 409, started.json()
    assert "job is expired; cannot become running" in str(started.json())
    claimed = client.post(f"/api/jobs/{job.pk}/status/", {"status": "expired"}, format="json")
    assert claimed.status_code == 400 and "status" in claimed.json()["errors"]
    with pytest.raises(ApplicationError, match="already expired"):
        job_abort(job=job, reason="too late")
    job.refresh_from_db()
    assert job.status == "expired" and job.attempt == ""


def test_a_worker_that_took_the_job_just_before_it_expired_still_reports_its_end(make_rig_and_token, celery_broker):
    # It took the message in time but could not report "running" (service down);
    # meanwhile the sweeper expired the job. Its final account is the truth.
    rig, raw = make_rig_and_token("bench-a")
    job = jobs_enqueue(rig=rig, kind="suite", spec=attach_spec())
    BenchmarkJob.objects.filter(pk=job.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    jobs_sweep_stuck()
    done = token_client(raw).post(f"/api/jobs/{job.pk}/status/", {"status": "finished"}, format="json")
    assert done.status_code == 200, done.json()
    assert done.json()["status"] == "finished"


@pytest.mark.django_db(transaction=True)
def test_the_rig_side_task_does_not_run_a_job_the_service_says_expired(rig_env):
    rig = rig_env
    job = jobs_enqueue(rig=rig, kind="suite", spec=attach_spec("http://127.0.0.1:9"))
    BenchmarkJob.objects.filter(pk=job.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    jobs_sweep_stuck()
    job.refresh_from_db()

    result = run_benchmark.apply(args=[job_dispatch_spec(job=job)]).get()
    job.refresh_from_db()
    assert result["status"] == "skipped" and "expired" in result["reason"]
    assert job.status == "expired" and job.started_at is None and job.attempt == ""


@pytest.mark.celery_worker
@pytest.mark.django_db(transaction=True)
def test_a_rig_worker_drops_a_message_that_expired_in_its_queue(
    staff_client, make_rig_and_token, rig_worker, live_server, celery_broker, settings
):
    settings.RIGBOARD_JOB_QUEUE_TTL_S = 1
    _, raw = make_rig_and_token("bench-a")
    response = staff_client.post(
        "/api/jobs/", {"rig": "bench-a", "spec": attach_spec("http://127.0.0.1:9")}, format="json"
    )
    assert response.status_code == 201, response.json()
    job_id = response.json()["id"]
    assert len(queued_messages(celery_broker, "rig.bench-a")) == 1
    time.sleep(1.5)  # the rig's worker comes online after the job's expiry

    worker = rig_worker("bench-a", token=raw, service_url=live_server.url)
    # Taken off the queue…
    wait_until(lambda: queued_messages(celery_broker, "rig.bench-a") == [], 30, "the worker to take the message")
    job = BenchmarkJob.objects.get(pk=job_id)
    # …and dropped unrun: Celery treats a message past its expiry as revoked.
    worker.wait_for(f"Discarding revoked task: rigboard.run_benchmark[{job.celery_task_id}]", timeout_s=30)
    assert job.status == "queued" and job.attempt == "" and job.started_at is None  # never run, never reported
    (changed,) = jobs_sweep_stuck()
    assert changed.pk == job_id and changed.status == "expired"

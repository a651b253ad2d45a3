"""The stuck-job sweeper: a running job whose worker went silent is given up."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from django_celery_beat.models import PeriodicTask

from leaderboard.jobs.models import BenchmarkJob
from leaderboard.jobs.services import job_status_update, jobs_enqueue, jobs_sweep_stuck
from leaderboard.jobs.tasks import SWEEP_TASK, jobs_sweep_stuck_task
from leaderboard.results.services.runs import run_create
from tests.fixtures.data import run_payload
from tests.jobs.conftest import attach_spec

pytestmark = pytest.mark.django_db


@pytest.fixture
def running_job(make_rig_and_token, celery_broker):
    rig, _ = make_rig_and_token("bench-a")
    job = jobs_enqueue(rig=rig, kind="suite", spec=attach_spec(), time_limit_s=60)
    return job_status_update(job=job, status="running", attempt="a", worker="bench-a@host")


def test_it_aborts_a_running_job_past_its_time_limit_and_grace(running_job):
    late = running_job.started_at + timedelta(seconds=60 + 30 + 1)
    (changed,) = jobs_sweep_stuck(now=late, grace=timedelta(seconds=30))
    assert changed.pk == running_job.pk
    running_job.refresh_from_db()
    assert running_job.status == "aborted" and running_job.finished_at is not None
    assert "no report from worker bench-a@host within the job's 60 s time limit + 30 s grace" in running_job.error


def test_it_leaves_a_job_within_its_time_limit_alone(running_job):
    assert jobs_sweep_stuck(now=running_job.started_at + timedelta(seconds=80), grace=timedelta(seconds=30)) == []
    running_job.refresh_from_db()
    assert running_job.status == "running"


def test_it_closes_the_run_the_aborted_job_left_open(running_job):
    opened = run_create(
        rig=running_job.rig, **run_payload(run={"uuid": running_job.run_uuid, "status": "running"}, samples=[])
    ).run
    jobs_sweep_stuck(now=timezone.now() + timedelta(hours=1), grace=timedelta(0))
    opened.refresh_from_db()
    assert opened.status == "aborted" and "the worker was lost" in opened.failure_reason


def test_a_job_whose_run_arrived_takes_the_runs_status(running_job):
    # The rig delivered its run (e.g. from its spool) but its final job report was lost.
    run_create(rig=running_job.rig, **run_payload(run={"uuid": running_job.run_uuid, "status": "finished"}))
    (changed,) = jobs_sweep_stuck(now=running_job.started_at + timedelta(seconds=1))
    assert changed.status == "finished"
    assert BenchmarkJob.objects.get().status == "finished"


def test_the_sweeper_task_is_scheduled_every_minute_and_runs(running_job):
    periodic = PeriodicTask.objects.get(task=SWEEP_TASK)
    assert periodic.enabled and periodic.interval.every == 60 and periodic.interval.period == "seconds"
    BenchmarkJob.objects.filter(pk=running_job.pk).update(started_at=timezone.now() - timedelta(days=1))
    assert jobs_sweep_stuck_task.apply().get() == 1
    assert BenchmarkJob.objects.get().status == "aborted"


def test_a_queued_job_whose_run_arrived_is_settled_but_an_idle_queued_job_is_not(make_rig_and_token, celery_broker):
    rig, _ = make_rig_and_token("bench-a")
    delivered = jobs_enqueue(rig=rig, kind="suite", spec=attach_spec(), time_limit_s=60)
    waiting = jobs_enqueue(rig=rig, kind="suite", spec=attach_spec(), time_limit_s=60)
    run_create(rig=rig, **run_payload(run={"uuid": delivered.run_uuid, "status": "failed", "failure_reason": "oom"}))
    # Within the queue's expiry (tests/jobs/test_expiry.py has the expired case).
    (changed,) = jobs_sweep_stuck(now=timezone.now() + timedelta(hours=2))
    assert changed.pk == delivered.pk and changed.status == "failed" and changed.error == "oom"
    assert BenchmarkJob.objects.get(pk=waiting.pk).status == "queued"

"""The rig-side task run in-process (Celery's ``apply``) against a live
Rigboard server: it reports the job it is given, and a redelivered job is
aborted instead of run twice. The worker-process tests are in tests/jobs/."""

from __future__ import annotations

import contextlib
import signal
import threading

import pytest
import requests

from leaderboard.jobs.models import BenchmarkJob
from leaderboard.jobs.services import job_dispatch_spec, job_status_update, jobs_enqueue
from leaderboard.results.models import Rig, Run
from runners.tasks import run_benchmark
from tests.fixtures.waiting import wait_until

pytestmark = pytest.mark.django_db(transaction=True)


def _job(rig: Rig, url: str = "http://127.0.0.1:9") -> BenchmarkJob:
    spec = {"attach": {"url": url}, "workload": {"max_tokens": 16, "repetitions": 1, "warmup": 0}}
    return jobs_enqueue(rig=rig, kind="suite", spec=spec, time_limit_s=120)


def test_it_reports_a_job_that_cannot_reach_its_server_as_failed(rig_env):
    job = _job(rig_env)
    result = run_benchmark.apply(args=[job_dispatch_spec(job=job)]).get()
    job.refresh_from_db()
    assert result["status"] == "failed" == job.status
    assert job.error.startswith("ServerError: attach.url: cannot reach http://127.0.0.1:9")
    assert job.failure_kind == "unreachable"  # the ServerError's own kind, sent with the report
    assert job.started_at is not None and job.attempt


def test_a_redelivered_job_is_aborted_not_run_twice(rig_env):
    job = _job(rig_env)
    job_status_update(job=job, status="running", attempt="lost-attempt", worker="bench-a@dead")
    result = run_benchmark.apply(args=[job_dispatch_spec(job=job)]).get()
    job.refresh_from_db()
    assert result["status"] == "aborted" == job.status
    assert "already started by attempt lost-attempt on bench-a@dead" in job.error
    assert "not run a second time" in job.error


def test_a_job_aborted_before_it_starts_is_skipped(rig_env):
    job = _job(rig_env)
    job_status_update(job=job, status="aborted", error="aborted by ops")
    result = run_benchmark.apply(args=[job_dispatch_spec(job=job)]).get()
    job.refresh_from_db()
    assert result["status"] == "skipped" and job.status == "aborted" and job.error == "aborted by ops"


def test_a_redelivered_job_whose_run_arrived_ends_as_its_run(rig_env):
    from leaderboard.results.services.runs import run_create
    from tests.fixtures.data import run_payload

    job = _job(rig_env)
    job_status_update(job=job, status="running", attempt="lost-attempt", worker="bench-a@dead")
    run_create(rig=rig_env, **run_payload(run={"uuid": job.run_uuid, "status": "finished"}))
    result = run_benchmark.apply(args=[job_dispatch_spec(job=job)]).get()
    job.refresh_from_db()
    assert result["status"] == "finished" == job.status
    assert job.progress == f"the worker was lost after delivering run {job.run_uuid}"


def test_a_worker_with_a_revoked_token_leaves_the_job_queued(rig_env, monkeypatch):
    job = _job(rig_env)
    monkeypatch.setenv("RIGBOARD_TOKEN", "rb_not-a-token")
    result = run_benchmark.apply(args=[job_dispatch_spec(job=job)]).get()
    job.refresh_from_db()
    assert result["status"] == "rejected" and "401" in result["error"]
    assert job.status == "queued" and job.started_at is None


def test_a_progress_report_on_a_job_staff_aborted_tells_the_rig_it_ended(rig_env, live_server):
    import os

    from leaderboard.jobs.services import job_abort
    from runners.delivery.jobreport import JobReporter

    job = _job(rig_env)
    reporter = JobReporter(
        service_url=live_server.url, token=os.environ["RIGBOARD_TOKEN"], job_id=job.pk, attempt="a-1", backoff_s=0.01
    )
    reporter.report("running", progress="started")
    reporter.progress("warmup 1/3")
    assert reporter.ended == {}
    job_abort(job=BenchmarkJob.objects.get(pk=job.pk), reason="aborted by ops")

    reporter.progress("repetitions 1/3")
    reporter.close()
    assert reporter.ended["status"] == "aborted" and reporter.ended["error"] == "aborted by ops"
    job.refresh_from_db()
    # The refused report changed nothing: staff's word stands.
    assert job.status == "aborted" and job.error == "aborted by ops" and job.progress == "warmup 1/3"


def _alarm_once_stored(url: str, n_samples: int) -> threading.Thread:
    """Fire the armed soft limit's SIGALRM now, once the run at ``url`` has
    ``n_samples`` samples on the service: the limit lands mid-suite whatever
    the machine's speed."""

    def stored() -> bool:
        response = requests.get(url, timeout=10)
        return response.status_code == 200 and len(response.json()["samples"]) >= n_samples

    def watch() -> None:
        # A time-out here only leaves the alarm unfired: the test then fails on the run's status.
        with contextlib.suppress(AssertionError):
            wait_until(stored, 120, f"{n_samples} samples at {url}", every_s=0.25)
            signal.setitimer(signal.ITIMER_REAL, 0.001)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


@pytest.mark.llama
def test_a_soft_time_limit_mid_suite_ends_the_run_failed_with_the_samples_so_far_and_delivers_it(
    rig_env, gemma_server, live_server
):
    spec = {"attach": {"url": gemma_server.base_url}, "workload": {"max_tokens": 16, "repetitions": 200, "warmup": 0}}
    job = jobs_enqueue(rig=rig_env, kind="suite", spec=spec, time_limit_s=300)
    assert job.soft_time_limit_s == 270
    watcher = _alarm_once_stored(f"{live_server.url}/api/runs/{job.run_uuid}/", 2)
    result = run_benchmark.apply(args=[job_dispatch_spec(job=job)]).get()
    watcher.join(timeout=10)

    job.refresh_from_db()
    run = Run.objects.get(uuid=job.run_uuid)
    assert result["status"] == "failed" == job.status and result["delivered"] == "posted"
    n = run.samples.count()
    assert 2 <= n < 200 and run.n_samples == n == result["n_samples"]
    assert run.status == "failed" and run.finished_at is not None
    assert run.failure_reason == (
        f"stopped by the job's time limit: soft time limit (270 s) exceeded ({n} of 200 repetitions measured)"
    )
    assert job.error == run.failure_reason and job.progress == "run failed, posted"

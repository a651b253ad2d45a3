"""A real rig worker (``celery -A runners.celery_app worker``, solo pool) on the
real Redis broker takes jobs from its own queue and reports them to a live
Rigboard server; a worker killed mid-job leaves the job aborted, not running;
a job staff abort mid-run stops on the rig too."""

from __future__ import annotations

import ast
import contextlib
import os
import re
import signal
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
import requests

from leaderboard.jobs.models import BenchmarkJob
from leaderboard.jobs.services import jobs_sweep_stuck
from leaderboard.results.models import Run, Sample
from runners.harness.server import free_port
from tests.fixtures.celery_worker import RigWorker, queued_messages
from tests.fixtures.waiting import wait_for_first_sample, wait_until, wait_until_served
from tests.jobs.conftest import attach_spec

pytestmark = [pytest.mark.celery_worker, pytest.mark.django_db(transaction=True)]


def wait_for_job(job_id: int, condition, timeout_s: float = 180.0, worker=None) -> BenchmarkJob:
    def stuck() -> str:
        job = BenchmarkJob.objects.get(pk=job_id)
        log = worker.log()[-4000:] if worker else ""
        return f"job {job_id} stuck at {job.status} / {job.progress!r} / {job.error!r}\n{log}"

    def reached() -> BenchmarkJob | None:
        job = BenchmarkJob.objects.get(pk=job_id)
        return job if condition(job) else None

    return wait_until(
        reached,
        timeout_s,
        f"job {job_id}",
        every_s=0.3,
        detail=stuck,
    )


def _queue(staff_client, rig: str, spec: dict, **extra) -> int:
    response = staff_client.post("/api/jobs/", {"rig": rig, "spec": spec, **extra}, format="json")
    assert response.status_code == 201, response.json()
    return response.json()["id"]


def test_a_worker_for_another_rig_does_not_take_the_job(
    staff_client, make_rig_and_token, rig_worker, live_server, celery_broker
):
    _, raw_a = make_rig_and_token("bench-a")
    _, raw_b = make_rig_and_token("bench-b")
    worker_b = rig_worker("bench-b", token=raw_b, service_url=live_server.url)
    # Nothing listens on port 9: the job fails fast, for a real reason, once its own rig runs it.
    job_id = _queue(staff_client, "bench-a", attach_spec("http://127.0.0.1:9"))
    # bench-b's worker is shown working: it takes a job of its own queued after bench-a's
    # and ends it. A worker that consumed bench-a's queue too would have taken the older one.
    own_id = _queue(staff_client, "bench-b", attach_spec("http://127.0.0.1:9"))
    own = wait_for_job(own_id, lambda j: j.is_terminal, timeout_s=240, worker=worker_b)
    assert own.status == "failed" and own.worker.startswith("bench-b-")
    assert BenchmarkJob.objects.get(pk=job_id).status == "queued"
    assert [m["args"][0]["job"]["id"] for m in queued_messages(celery_broker, "rig.bench-a")] == [job_id]

    worker_a = rig_worker("bench-a", token=raw_a, service_url=live_server.url)
    job = wait_for_job(job_id, lambda j: j.is_terminal, timeout_s=60, worker=worker_a)
    assert job.status == "failed", job.error
    assert "attach.url: cannot reach http://127.0.0.1:9" in job.error
    assert job.worker.startswith("bench-a-") and job.started_at and job.finished_at
    assert queued_messages(celery_broker, "rig.bench-a") == []
    assert Run.objects.count() == 0


@pytest.mark.llama
def test_a_rig_worker_runs_its_job_and_the_run_appears(
    staff_client, make_rig_and_token, rig_worker, live_server, gemma_server
):
    rig, raw = make_rig_and_token("bench-a")
    worker = rig_worker("bench-a", token=raw, service_url=live_server.url)
    job_id = _queue(staff_client, "bench-a", attach_spec(gemma_server.base_url, max_tokens=16, repetitions=1))
    job = wait_for_job(job_id, lambda j: j.is_terminal, worker=worker)
    assert job.status == "finished", (job.error, worker.log()[-3000:])
    run = Run.objects.get(uuid=job.run_uuid)
    assert run.rig == rig and run.status == "finished" and run.n_samples == 1
    assert run.samples.get().tokens_generated > 0
    detail = staff_client.get(f"/api/jobs/{job_id}/").json()
    assert detail["status"] == "finished" and detail["run"]["status"] == "finished"
    assert detail["progress"].startswith("run finished, posted")


def _kill_mid_job(staff_client, rig_worker, live_server, raw, gemma_server, **worker_env):
    """Start a job, SIGKILL its worker once the service holds the run with a
    repetition or more, and return (job, the sample indexes the service held)."""
    worker = rig_worker("bench-a", token=raw, service_url=live_server.url, **worker_env)
    spec = attach_spec(gemma_server.base_url, max_tokens=16, repetitions=20)
    job_id = _queue(staff_client, "bench-a", spec, time_limit_s=900)
    run_uuid = BenchmarkJob.objects.get(pk=job_id).run_uuid
    wait_for_first_sample(run_uuid, worker)
    worker.kill()
    wait_until_served(live_server)  # an append the worker sent just before it died is stored or dropped now
    job = BenchmarkJob.objects.get(pk=job_id)
    assert job.status == "running"  # nobody told the service: this is what must not stay
    # Not silently lost: the run is on the service, open, with what was measured before the kill.
    run = Run.objects.get(uuid=run_uuid)
    held = sorted(run.samples.values_list("index", flat=True))
    assert run.status == "running" and run.rig.name == "bench-a"
    assert held == list(range(1, len(held) + 1)) and 1 <= len(held) < 20
    return job, held


@pytest.mark.llama
def test_a_killed_workers_job_is_aborted_when_redelivered_not_run_twice(
    staff_client, make_rig_and_token, rig_worker, live_server, gemma_server, celery_broker
):
    _, raw = make_rig_and_token("bench-a")
    fast_redelivery = {"RIGBOARD_VISIBILITY_TIMEOUT_S": "3", "RIGBOARD_RESTORE_INTERVAL_S": "1"}
    job, held = _kill_mid_job(staff_client, rig_worker, live_server, raw, gemma_server, **fast_redelivery)
    first_attempt = job.attempt
    assert celery_broker.hlen("unacked") == 1  # acks_late: the message outlived its worker

    second = rig_worker("bench-a", token=raw, service_url=live_server.url, **fast_redelivery)
    job = wait_for_job(job.pk, lambda j: j.is_terminal, timeout_s=60, worker=second)
    assert job.status == "aborted"
    assert f"already started by attempt {first_attempt}" in job.error and "not run a second time" in job.error
    assert job.attempt == first_attempt
    # The open run was closed with its job, keeping the repetitions posted before the kill;
    # the second delivery measured nothing.
    run = wait_until(lambda: Run.objects.filter(uuid=job.run_uuid, status="aborted").first(), 30, "the run closed")
    assert run.failure_reason == job.error and run.finished_at
    assert sorted(run.samples.values_list("index", flat=True)) == held and run.n_samples == len(held)
    assert Run.objects.count() == 1
    # The worker acknowledges the message when its task returns (acks_late), after it has told
    # the service: the ack may land a moment after the run is seen closed.
    wait_until(lambda: celery_broker.hlen("unacked") == 0, 30, "the redelivered message acknowledged")
    assert queued_messages(celery_broker, "rig.bench-a") == []


@pytest.mark.llama
def test_a_killed_workers_job_is_aborted_by_the_sweeper(
    staff_client, make_rig_and_token, rig_worker, live_server, gemma_server
):
    _, raw = make_rig_and_token("bench-a")
    job, held = _kill_mid_job(staff_client, rig_worker, live_server, raw, gemma_server)
    # No worker comes back. Once the job's hard limit + grace has passed, the sweeper gives it up.
    assert jobs_sweep_stuck(now=job.started_at + timedelta(seconds=job.time_limit_s - 1), grace=timedelta(0)) == []
    (aborted,) = jobs_sweep_stuck(now=job.started_at + timedelta(seconds=job.time_limit_s + 1), grace=timedelta(0))
    assert aborted.pk == job.pk and aborted.status == "aborted" and "the worker was lost" in aborted.error
    run = Run.objects.get(uuid=job.run_uuid)
    assert run.status == "aborted" and "the worker was lost" in run.failure_reason
    assert sorted(run.samples.values_list("index", flat=True)) == held and run.n_samples == len(held)


@pytest.mark.llama
def test_a_job_over_its_soft_time_limit_ends_failed_and_its_run_is_posted_failed(
    staff_client, make_rig_and_token, rig_worker, live_server, gemma_server
):
    _, raw = make_rig_and_token("bench-a")
    worker = rig_worker("bench-a", token=raw, service_url=live_server.url)
    spec = attach_spec(gemma_server.base_url, max_tokens=16, repetitions=200)
    job_id = _queue(staff_client, "bench-a", spec, time_limit_s=20)
    job = wait_for_job(job_id, lambda j: j.is_terminal, timeout_s=120, worker=worker)
    assert job.soft_time_limit_s == 10
    assert job.status == "failed" and "soft time limit (10 s) exceeded" in job.error, job.error
    run = Run.objects.get(uuid=job.run_uuid)
    assert run.status == "failed" and "soft time limit (10 s) exceeded" in run.failure_reason
    assert run.n_samples == run.samples.count() < 200
    assert (job.finished_at - job.started_at).total_seconds() < 60


def _task_return(worker: RigWorker, timeout_s: float) -> dict:
    """Wait until the worker logs the task's return value; return the value."""
    done = re.compile(r"Task rigboard\.run_benchmark\[[^\]]+\] succeeded in [\d.]+s: (\{.*\})")
    found = wait_until(
        lambda: done.search(worker.log()),
        timeout_s,
        "the task to return",
        every_s=0.1,
        detail=lambda: worker.log()[-4000:],
    )
    return ast.literal_eval(found.group(1))


def _llama_servers_on(port: int) -> list[int]:
    """Return the pids of processes whose command line has ``--port <port>`` (a llama-server)."""
    pids = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            argv = cmdline.read_bytes().split(b"\0")
        except OSError:
            continue  # gone meanwhile
        if any(a == b"--port" and b == str(port).encode() for a, b in zip(argv, argv[1:], strict=False)):
            pids.append(int(cmdline.parent.name))
    return pids


@pytest.fixture
def llama_port() -> Iterator[int]:
    """Yield a free port for a llama-server the rig launches; one still there at
    teardown (a failed test: a worker stopped mid-job leaves its server's own
    session behind) is killed, so it cannot slow the tests after it."""
    port = free_port("127.0.0.1")
    yield port
    for pid in _llama_servers_on(port):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


@pytest.mark.llama
def test_a_job_staff_abort_mid_run_stops_the_rigs_benchmark_and_its_server(
    staff_client, make_rig_and_token, rig_worker, live_server, gemma_server_section, llama_port, tmp_path
):
    _, raw = make_rig_and_token("bench-a")
    worker = rig_worker("bench-a", token=raw, service_url=live_server.url)
    port = llama_port
    repetitions = 40
    spec = {
        "server": gemma_server_section(port=port),
        "workload": {"max_tokens": 16, "repetitions": repetitions, "warmup": 0},
        "cache_dir": str(tmp_path / "cache"),
    }
    job_id = _queue(staff_client, "bench-a", spec, time_limit_s=900)
    run_uuid = BenchmarkJob.objects.get(pk=job_id).run_uuid
    wait_for_first_sample(run_uuid, worker)
    assert _llama_servers_on(port)  # the worker launched its llama-server

    response = staff_client.post(
        f"/api/jobs/{job_id}/status/", {"status": "aborted", "error": "aborted by ops: wrong model"}, format="json"
    )
    assert response.status_code == 200 and response.json()["status"] == "aborted"
    # From here the service takes no more samples: these are the ones the run keeps.
    held = sorted(Sample.objects.filter(run__uuid=run_uuid).values_list("index", flat=True))
    assert held == list(range(1, len(held) + 1)) and len(held) <= 3

    result = _task_return(worker, timeout_s=300)
    # Stopped after the repetition in hand (whose append was refused), not after the 40th:
    # what it measured says so, however busy the machine (no wall-clock window).
    assert result["status"] == "aborted" and result["error"] == "aborted by ops: wrong model", result
    assert len(held) <= result["n_samples"] <= len(held) + 1 <= repetitions - 6
    assert result["delivered"] == "closed_on_service"
    # Its llama-server was stopped before the task returned.
    assert _llama_servers_on(port) == []
    with pytest.raises(requests.ConnectionError):
        requests.get(f"http://127.0.0.1:{port}/health", timeout=2)

    # The service's word stands: no report overwrote the job, the run kept what it had
    # (the task has returned: every report it made was answered before that).
    job = BenchmarkJob.objects.get(pk=job_id)
    assert job.status == "aborted" and job.error == "aborted by ops: wrong model" and job.finished_at
    run = Run.objects.get(uuid=run_uuid)
    assert run.status == "aborted" and run.failure_reason == job.error and run.finished_at
    assert sorted(run.samples.values_list("index", flat=True)) == held and run.n_samples == len(held)
    assert Run.objects.count() == 1 and not list((tmp_path / "spool-bench-a").glob("**/*.json"))

"""kill -9 of a rig worker that launched its own llama-server: the server dies
with the worker, and the service's sweeper closes the open run and its job
within the documented silence, minutes rather than the job's time limit.
A real rig worker on the real Redis, a live Rigboard, llama-server + Gemma."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from django.conf import settings
from django.utils import timezone

from leaderboard.jobs.models import BenchmarkJob
from leaderboard.jobs.services import jobs_sweep_stuck
from leaderboard.results.models import Run
from leaderboard.results.services.silent import runs_close_silent
from tests.fixtures.llama_jobs import pids_with
from tests.fixtures.waiting import wait_for_first_sample, wait_until, wait_until_served

pytestmark = [pytest.mark.celery_worker, pytest.mark.llama, pytest.mark.django_db(transaction=True)]


def test_a_killed_workers_server_dies_with_it_and_its_job_is_closed_in_minutes(
    staff_client, make_rig_and_token, rig_worker, live_server, gemma_server_section, tmp_path
):
    _, raw = make_rig_and_token("bench-a")
    worker = rig_worker("bench-a", token=raw, service_url=live_server.url)
    marker = f"worker-kill-{uuid.uuid4().hex[:8]}"
    spec = {
        "server": gemma_server_section(extra_args=["--alias", marker]),
        "workload": {"max_tokens": 16, "repetitions": 30, "warmup": 0, "request_timeout_s": 60.0},
        "cache_dir": str(tmp_path / "rig-cache"),
    }
    response = staff_client.post(
        "/api/jobs/", {"rig": "bench-a", "spec": spec, "time_limit_s": 2 * 60 * 60}, format="json"
    )
    assert response.status_code == 201, response.json()
    job = BenchmarkJob.objects.get(pk=response.json()["id"])
    wait_for_first_sample(job.run_uuid, worker, timeout_s=180)
    assert pids_with(marker)
    worker.kill()
    wait_until(lambda: not pids_with(marker), 10, "llama-server to die with its rig worker")
    wait_until_served(live_server)  # an append sent just before the kill is stored or dropped now
    run = Run.objects.get(uuid=job.run_uuid)
    held = sorted(run.samples.values_list("index", flat=True))
    assert run.status == "running" and 1 <= len(held) < 30
    assert BenchmarkJob.objects.get(pk=job.pk).status == "running"

    # A two-hour job is given up after the run's silence, not after 2 h + grace.
    later = timezone.now() + timedelta(seconds=settings.RIGBOARD_RUN_SILENCE_S + 1)
    assert settings.RIGBOARD_RUN_SILENCE_S <= 10 * 60
    (closed,) = runs_close_silent(now=later)
    (settled,) = jobs_sweep_stuck(now=later)
    assert closed.uuid == job.run_uuid and closed.status == "aborted"
    assert sorted(closed.samples.values_list("index", flat=True)) == held
    assert settled.pk == job.pk and settled.status == "aborted" and settled.error == closed.failure_reason

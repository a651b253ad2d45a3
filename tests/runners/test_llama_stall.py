"""Issue 20's stall drill with the real parts: ``python -m runners run`` (real
llama-server + Gemma 3 270M) delivering to gunicorn on PostgreSQL, whose
workers are stopped (SIGSTOP) once the runner has launched its llama-server and
resumed (SIGCONT) once it has stopped it and its close waits at the service.

While the workers are stopped, the kernel still takes the runner's connections
into the listening socket's accept queue: its open at the start and again with
each repetition time out, and its close (the whole finished run: never opened,
it is POSTed whole) is queued behind them. Resumed, the workers take them all at
once and they race each other's INSERT of the one uuid. Before the fix
(ddfd74b), a whole run that lost that race was answered 200 with the run as the
winning open left it, ``running`` and without samples; the runner printed
"delivery: posted the service had already ended this run as running", exited
0 and kept no spool copy (6b159dc: it keeps one unless the answer shows the run
stored), and the silence sweeper later closed the run ``aborted`` with nothing.
Now the run ends ``finished`` with every sample the runner measured, delivered
by its close or, if the service answered too late, by the flush after it."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.utils import timezone

from leaderboard.results.models import Rig, Run
from leaderboard.results.services.silent import runs_close_silent
from tests.fixtures.gunicorn import accept_queue_length, gunicorn_workers
from tests.fixtures.llama_jobs import SmallJob, pids_with, tagged, write_rig_config
from tests.fixtures.waiting import wait_until

pytestmark = [pytest.mark.llama, pytest.mark.django_db(transaction=True)]
ROOT = Path(__file__).resolve().parents[2]
REPETITIONS = 1
# The runner's open waits min(timeout_s, 10 s) for an answer, its close timeout_s.
SERVICE_TIMEOUT_S = 8.0
COMPARED = ("index", "tokens_generated", "decode_tokens_per_s_server", "decode_tokens_per_s_client", "ttft_ms")


def _signal(pids: list[int], sig: signal.Signals) -> None:
    for pid in pids:
        os.kill(pid, sig)


def _stall_the_service_while_the_server_runs(
    runner: subprocess.Popen[bytes], url: str, marker: str, runner_log: Path
) -> None:
    """Stop the workers serving ``url`` once the runner's llama-server (command
    line tagged ``marker``) is there, before it can answer /health, so before the
    runner can open its run; resume them once that server is gone and the
    runner's close waits in the accept queue behind its opens."""
    workers = gunicorn_workers(url)
    assert workers, "gunicorn should have its workers"
    wait_until(lambda: pids_with(marker) or runner.poll() is not None, 300, "the runner to launch llama-server")
    _signal(workers, signal.SIGSTOP)
    try:
        # One open at the start and one with each repetition, then the close.
        queued = REPETITIONS + 2
        try:
            wait_until(
                lambda: (not pids_with(marker) and accept_queue_length(url) >= queued) or runner.poll() is not None,
                300,
                f"llama-server stopped and the runner's {queued} requests queued at the stalled service",
            )
        except AssertionError as exc:
            server = "running" if pids_with(marker) else "gone"
            state = (
                f"llama-server {server}, {accept_queue_length(url)} queued; the runner said {runner_log.read_text()}"
            )
            raise AssertionError(f"{exc}: {state}") from None
    finally:
        _signal(workers, signal.SIGCONT)


def _stored_samples(run: Run) -> list[dict[str, Any]]:
    return list(run.samples.order_by("index").values(*COMPARED))


def test_a_run_whose_service_stalls_while_it_measures_is_stored_finished_with_every_sample(
    gunicorn_service: Any, cpu_rig: tuple[Rig, str], small_gemma_job: SmallJob, tmp_path: Path
) -> None:
    # A --timeout past the stall: gunicorn's master would otherwise replace the
    # silent workers after 30 s, and the new ones would take the queue one by one.
    url = gunicorn_service(
        workers=2, threads=4, RIGBOARD_THROTTLE_RIG_WRITES="off", LOG_LEVEL="ERROR", GUNICORN_CMD_ARGS="--timeout=600"
    )
    marker = f"stall-{uuid.uuid4().hex[:8]}"
    # No draft model: half the loading and computing, and the drill is about delivery.
    server = {**tagged(marker), "spec_type": "none", "draft_model": "", "draft_n_max": None}
    spec = small_gemma_job(url, cpu_rig[1], server=server, max_tokens=4, repetitions=REPETITIONS)
    run_uuid = spec["run_uuid"] = str(uuid.uuid4())
    spec["service"]["timeout_s"] = SERVICE_TIMEOUT_S
    config = write_rig_config(tmp_path, spec)
    spool = Path(spec["service"]["spool_dir"])
    measured_copy = tmp_path / "measured.json"
    out_path, err_path = tmp_path / "runner.out", tmp_path / "runner.err"
    command = [sys.executable, "-m", "runners", "run", "--config", str(config), "--output", str(measured_copy)]
    with out_path.open("wb") as out, err_path.open("wb") as err:
        runner = subprocess.Popen(command, cwd=ROOT, stdout=out, stderr=err)
        try:
            _stall_the_service_while_the_server_runs(runner, url, marker, err_path)
            runner.wait(timeout=180)
        finally:
            if runner.poll() is None:
                runner.kill()
                runner.wait()
    said, warned = out_path.read_text(), err_path.read_text()

    assert runner.returncode == 0, said + warned
    assert "could not open it on the service" in warned, "the stall should have met the runner's open"
    assert "already ended this run" not in said, said
    assert f"run {run_uuid}: finished" in said
    delivery = re.search(r"^delivery: (\w+)", said, re.MULTILINE)
    assert delivery is not None, said
    # Posted by the close (the race resolved on the service), or spooled when the
    # service's answer came too late or did not show the run stored.
    delivered = delivery.group(1)
    assert delivered in ("posted", "spooled"), said
    spooled = [p.stem for p in spool.rglob("*.json")]
    assert spooled == ([] if delivered == "posted" else [run_uuid]), said

    flush = subprocess.run(
        [sys.executable, "-m", "runners", "flush", "--config", str(config)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert flush.returncode == 0, flush.stdout + flush.stderr
    assert json.loads(flush.stdout)["posted"] == spooled
    assert list(spool.rglob("*.json")) == []

    # Every sample the runner measured (its own copy of the run), stored once.
    measured = json.loads(measured_copy.read_text())
    assert measured["status"] == "finished" and len(measured["samples"]) == REPETITIONS
    run = Run.objects.get(uuid=run_uuid)
    assert (run.status, run.rig_id) == ("finished", cpu_rig[0].pk)
    assert _stored_samples(run) == [{k: s[k] for k in COMPARED} for s in measured["samples"]]
    assert Run.objects.count() == 1

    # The silence sweeper has nothing to close: the run is not turned aborted.
    later = timezone.now() + timedelta(seconds=settings.RIGBOARD_RUN_SILENCE_S + 1)
    assert runs_close_silent(now=later) == []
    run.refresh_from_db()
    assert run.status == "finished" and run.samples.count() == REPETITIONS

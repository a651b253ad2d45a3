"""Kill drills with the real parts: ``python -m runners run`` killed with SIGKILL
mid-run (its llama-server must die with it, its open run must be closed by the
service's sweeper with the samples it had), and an orphan llama-server that
survived its runner stopped by the next runner's start. Also the spool drills
through the CLI: a full or unwritable spool, a corrupt spool file.
Real llama-server + Gemma 3 270M, a live Rigboard on PostgreSQL."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.utils import timezone

from leaderboard.results.models import Rig, Run, Sample
from leaderboard.results.services.silent import runs_close_silent
from runners.cli import main
from runners.config import ServerConfig
from runners.delivery.client import ServiceClient
from runners.harness.orphans import _cmdline, process_start_time
from runners.harness.server import free_port
from runners.pipeline import run_job
from tests.fixtures.llama_jobs import SmallJob, pids_with, tagged, write_rig_config
from tests.fixtures.waiting import wait_until, wait_until_served
from tests.runners.unwritable import full_dir, read_only_dir

pytestmark = pytest.mark.llama
ROOT = Path(__file__).resolve().parents[2]


def test_a_runner_killed_mid_run_takes_its_server_with_it_and_its_run_is_closed_with_its_samples(
    live_server: Any, cpu_rig: tuple[Rig, str], small_gemma_job: SmallJob, tmp_path: Path
) -> None:
    marker = f"runner-kill-{uuid.uuid4().hex[:8]}"
    spec = small_gemma_job(live_server.url, cpu_rig[1], server=tagged(marker), max_tokens=16, repetitions=30)
    run_uuid = str(uuid.uuid4())
    spec["run_uuid"] = run_uuid
    config = write_rig_config(tmp_path, spec)
    runner = subprocess.Popen(
        [sys.executable, "-m", "runners", "run", "--config", str(config)],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_until(lambda: Sample.objects.filter(run__uuid=run_uuid).exists(), 300, "a repetition on the service")
        assert pids_with(marker), "llama-server should be running"
        runner.kill()
        runner.wait(timeout=10)
    finally:
        if runner.poll() is None:
            runner.kill()
    # The parent-death signal: the server does not outlive its runner.
    wait_until(lambda: not pids_with(marker), 10, "llama-server to die with its runner")
    wait_until_served(live_server)  # an append sent just before the kill is stored or dropped now
    run = Run.objects.get(uuid=run_uuid)
    held = sorted(run.samples.values_list("index", flat=True))
    assert run.status == "running" and held == list(range(1, len(held) + 1)) and 1 <= len(held) < 30
    # Nothing closes it but the sweeper, after the documented silence (minutes, not hours).
    assert settings.RIGBOARD_RUN_SILENCE_S <= 10 * 60
    assert runs_close_silent() == []
    later = timezone.now() + timedelta(seconds=settings.RIGBOARD_RUN_SILENCE_S + 1)
    (closed,) = runs_close_silent(now=later)
    assert closed.uuid == run.uuid and closed.status == "aborted"
    assert sorted(closed.samples.values_list("index", flat=True)) == held
    assert "no word from the runner" in closed.failure_reason


def test_the_next_runner_stops_an_orphan_server_it_launched_and_nothing_else(
    gemma_server_section: Callable[..., dict[str, Any]], small_gemma_job: SmallJob, tmp_path: Path
) -> None:
    marker = f"orphan-{uuid.uuid4().hex[:8]}"
    argv = ServerConfig(**gemma_server_section(**tagged(marker))).argv(port=free_port("127.0.0.1"))
    # A server left by a runner that died where no parent-death signal reached it.
    orphan = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, start_new_session=True)
    bystander = subprocess.Popen(["sleep", "120"])
    gone = subprocess.Popen(["true"])
    gone.wait()
    try:
        state = tmp_path / "cache" / "servers"
        state.mkdir(parents=True)
        wait_until(lambda: _cmdline(orphan.pid) == argv, 10, "the orphan to exec")
        dead_runner = {"runner_pid": gone.pid, "runner_start_time": "1"}
        (state / f"{orphan.pid}.json").write_text(
            json.dumps(
                {"pid": orphan.pid, "start_time": process_start_time(orphan.pid), "cmdline": argv, **dead_runner}
            )
        )
        # A record whose pid now belongs to another process: never signalled.
        (state / f"{bystander.pid}.json").write_text(
            json.dumps({"pid": bystander.pid, "start_time": "1", "cmdline": argv, **dead_runner})
        )
        result = run_job(small_gemma_job(repetitions=1, max_tokens=16))
        assert result.status == "finished"
        assert orphan.wait(timeout=15) is not None and pids_with(marker) == []
        assert bystander.poll() is None
        assert list(state.glob("*.json")) == []  # its own record removed at its stop, the stale ones at start
    finally:
        for proc in (orphan, bystander):
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def test_the_cli_keeps_a_run_a_full_spool_cannot_take_and_says_where(
    live_server: Any,
    cpu_rig: tuple[Rig, str],
    small_gemma_job: SmallJob,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    fallback = tmp_path / "fallback"
    monkeypatch.setenv("RIGBOARD_SPOOL_FALLBACK_DIRS", str(fallback))
    down = f"http://127.0.0.1:{free_port('127.0.0.1')}"
    with full_dir(tmp_path / "spool") as spool:
        config = write_rig_config(tmp_path, small_gemma_job(down, cpu_rig[1], max_tokens=16))
        assert main(["run", "--config", str(config)]) == 5
        out, err = capsys.readouterr()
        assert "Traceback" not in err
        (kept,) = fallback.rglob("*.json")  # in the rig's own directory there
        assert f"it was written to {kept} instead" in err and "No space left on device" in err
        assert f"delivery: spooled to {kept}" in out
        assert [p.name for p in spool.rglob("*") if p.is_file()] == ["filler"]  # no truncated temp file
        run = json.loads(kept.read_text())
        assert [s["index"] for s in run["samples"]] == [1, 2]
        assert "| 1 | " in out and "| 2 | " in out and "| AVG | " in out  # the results table, printed anyway
        # Later, with the service back, a flush delivers it from the fallback.
        flushed = ServiceClient(live_server.url, cpu_rig[1], spool_dir=spool, rig="cpu-rig").flush()
    assert flushed.posted == [run["uuid"]]
    assert Run.objects.get(uuid=run["uuid"]).samples.count() == 2


def test_the_cli_prints_a_run_no_directory_takes_as_json(
    cpu_rig: tuple[Rig, str],
    small_gemma_job: SmallJob,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    down = f"http://127.0.0.1:{free_port('127.0.0.1')}"
    with read_only_dir(tmp_path / "ro") as read_only:
        monkeypatch.setenv("RIGBOARD_SPOOL_FALLBACK_DIRS", str(read_only / "fallback"))
        spec = small_gemma_job(down, cpu_rig[1], max_tokens=16)
        spec["service"]["spool_dir"] = str(read_only / "spool")
        assert main(["run", "--config", str(write_rig_config(tmp_path, spec))]) == 5
        out, err = capsys.readouterr()
        assert "the run could not be written anywhere" in err and "it follows as JSON on stdout" in err
        run = json.loads(out.strip().splitlines()[-1])
        assert run["status"] == "finished" and [s["index"] for s in run["samples"]] == [1, 2]
        assert list(read_only.iterdir()) == []


def test_a_corrupt_spool_file_does_not_stop_the_next_run(
    live_server: Any,
    cpu_rig: tuple[Rig, str],
    small_gemma_job: SmallJob,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    spool = tmp_path / "spool"
    spool.mkdir()
    corrupt = spool / f"{uuid.uuid4()}.json"
    corrupt.write_text('{"uuid": "a run cut short by a cra')
    config = write_rig_config(tmp_path, small_gemma_job(live_server.url, cpu_rig[1], max_tokens=16))
    assert main(["run", "--config", str(config)]) == 0
    out, err = capsys.readouterr()
    assert f"spool: quarantined {spool / 'quarantine' / corrupt.name}: not valid JSON" in err
    assert (spool / "quarantine" / corrupt.name).read_text() == '{"uuid": "a run cut short by a cra'
    assert "delivery: posted" in out and Run.objects.count() == 1
    assert os.listdir(spool) == ["quarantine"]

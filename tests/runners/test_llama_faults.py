"""Faults: a service that is down, a llama-server killed or hung mid-run, a bad config.
Real llama-server + Gemma 3 270M, a live Rigboard on PostgreSQL."""

from __future__ import annotations

import signal
import socket
import uuid
from pathlib import Path
from typing import Any

import pytest
import requests

from leaderboard.results.models import Rig, Run
from runners.cli import main
from runners.config import ConfigError
from runners.delivery.client import ServiceClient
from runners.harness.server import ServerError, free_port
from runners.pipeline import run_job
from tests.fixtures.llama_jobs import SmallJob, on, pids_with, signal_tagged, tagged, write_rig_config

pytestmark = pytest.mark.llama


def test_a_run_made_while_the_service_is_down_is_spooled_then_delivered_once(
    live_server: Any, cpu_rig: tuple[Rig, str], small_gemma_job: SmallJob, tmp_path: Path
) -> None:
    down = f"http://127.0.0.1:{free_port('127.0.0.1')}"
    first = run_job(small_gemma_job(down, cpu_rig[1]))
    assert first.status == "finished"
    assert first.delivered == "spooled"
    assert Path(first.spool_path).is_file()
    assert Run.objects.count() == 0

    # The next run re-posts the spooled one before it starts, then posts itself.
    second = run_job(small_gemma_job(live_server.url, cpu_rig[1]))
    assert second.flushed == {"posted": [first.run_uuid], "rejected": [], "remaining": [], "quarantined": []}
    assert second.delivered == "posted"
    assert sorted(str(u) for u in Run.objects.values_list("uuid", flat=True)) == sorted(
        [first.run_uuid, second.run_uuid]
    )
    stored = requests.get(f"{live_server.url}/api/runs/{first.run_uuid}/", timeout=10).json()
    assert len(stored["samples"]) == 2

    # A repeated POST of the same run changes nothing on the service.
    client = ServiceClient(live_server.url, cpu_rig[1], spool_dir=tmp_path / "spool", rig="cpu-rig")
    assert client.flush().posted == []
    flush = ["flush", "--url", live_server.url, "--token", cpu_rig[1], "--rig", "cpu-rig"]
    assert main([*flush, "--spool-dir", str(tmp_path / "spool")]) == 0
    assert Run.objects.filter(uuid=first.run_uuid).count() == 1 and Run.objects.count() == 2


def test_a_server_killed_mid_run_gives_a_failed_run_with_the_samples_so_far(
    live_server: Any, cpu_rig: tuple[Rig, str], small_gemma_job: SmallJob
) -> None:
    marker = f"kill-me-{uuid.uuid4().hex[:8]}"
    spec = small_gemma_job(live_server.url, cpu_rig[1], server=tagged(marker), repetitions=3)
    result = run_job(spec, progress=on("repetitions", 1, lambda: signal_tagged(marker, signal.SIGKILL)))
    assert result.status == "failed"
    assert "repetition 2: llama-server exited (killed by signal 9)" in result.failure_reason
    assert result.delivered == "posted"
    stored = Run.objects.get(uuid=result.run_uuid)
    assert stored.status == "failed"
    assert stored.failure_reason == result.failure_reason
    assert list(stored.samples.values_list("index", flat=True)) == [1]
    assert stored.server_log_tail


def test_a_hung_server_gives_a_failed_run_naming_the_timeout(
    live_server: Any, cpu_rig: tuple[Rig, str], small_gemma_job: SmallJob
) -> None:
    marker = f"hang-me-{uuid.uuid4().hex[:8]}"
    # Long enough for a normal prefill on a busy 2-core machine, short enough for a test.
    spec = small_gemma_job(live_server.url, cpu_rig[1], server=tagged(marker), request_timeout_s=45.0)
    # The stop at the end SIGKILLs it after the grace.
    result = run_job(spec, progress=on("repetitions", 1, lambda: signal_tagged(marker, signal.SIGSTOP)))
    assert result.status == "failed"
    assert "repetition 2: no answer in time, the server hung" in result.failure_reason
    assert Run.objects.get(uuid=result.run_uuid).samples.count() == 1
    assert pids_with(marker) == []


def test_a_missing_model_file_is_a_clear_error_and_nothing_is_counted(
    live_server: Any, cpu_rig: tuple[Rig, str], small_gemma_job: SmallJob, tmp_path: Path
) -> None:
    missing = tmp_path / "no-such-model.gguf"
    spec = small_gemma_job(live_server.url, cpu_rig[1], server={"model": str(missing)})
    with pytest.raises(ConfigError) as caught:
        run_job(spec)
    assert caught.value.field == "server.model"
    assert str(caught.value) == f"server.model: no such file: {missing}"
    assert Run.objects.count() == 0
    assert not (tmp_path / "spool").exists() or not list((tmp_path / "spool").rglob("*.json"))


@pytest.mark.parametrize("field", ["model", "draft_model"])
def test_the_cli_exits_2_naming_a_missing_model_file(
    field: str, small_gemma_job: SmallJob, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_rig_config(tmp_path, small_gemma_job(server={field: str(tmp_path / "gone.gguf")}))
    assert main(["run", "--config", str(config), "--no-post"]) == 2
    err = capsys.readouterr().err
    assert err.endswith(f"\nconfig error: server.{field}: no such file: {tmp_path / 'gone.gguf'}\n")


def test_an_unknown_flag_is_a_clear_error_with_the_servers_words(small_gemma_job: SmallJob) -> None:
    spec = small_gemma_job(server={"extra_args": ["--no-such-flag"]})
    with pytest.raises(ServerError) as caught:
        run_job(spec)
    assert caught.value.kind == "unknown_flag"
    assert "--no-such-flag" in caught.value.reason
    assert caught.value.log_tail


def test_a_taken_port_is_a_clear_error(small_gemma_job: SmallJob) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        spec = small_gemma_job(server={"port": port})
        with pytest.raises(ServerError) as caught:
            run_job(spec)
    assert caught.value.kind == "port_in_use"
    assert f"127.0.0.1:{port} is already in use" in caught.value.reason


def test_the_cli_exits_3_on_a_missing_binary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "rig.toml"
    config.write_text(f'[server]\nbinary = "{tmp_path}/llama-server"\nmodel = "{tmp_path}/m.gguf"\n')
    assert main(["run", "--config", str(config), "--no-post"]) == 3
    assert "server error (missing_binary): server.binary: no executable file at" in capsys.readouterr().err

"""End to end on the CPU: the real llama-server with Gemma 3 270M (and Gemma as its
own draft model), the real pipeline, a live Rigboard on PostgreSQL, read back
through the API."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import requests

from leaderboard.results.models import Rig, Run
from runners import stats
from runners.cli import main
from runners.config import WorkloadConfig
from runners.harness.power import PowerMonitor
from runners.harness.server import LlamaServer
from runners.harness.suite import run_suite
from runners.harness.workload import Workload
from tests.fixtures.llama_jobs import job_spec

pytestmark = pytest.mark.llama

GEMMA_SHA256 = "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"


def test_it_benchmarks_gemma_and_the_service_stores_the_run(
    live_server: Any,
    cpu_rig: tuple[Rig, str],
    gemma_server_section: Callable[..., dict[str, Any]],
    tmp_path: Path,
) -> None:
    from runners.pipeline import run_job

    events: list[tuple[str, int, int]] = []
    result = run_job(
        job_spec(live_server.url, cpu_rig[1], gemma_server_section(), tmp_path),
        progress=lambda stage, done, total: events.append((stage, done, total)),
    )
    assert result.status == "finished", result.failure_reason
    # Opened as running once the server was up, closed with POST /api/runs/{uuid}/finish/.
    assert (result.delivered, result.http_status, result.opened) == ("posted", 200, True)
    assert ("repetitions", 4, 4) in events and ("sweep", 4, 4) in events

    resp = requests.get(f"{live_server.url}/api/runs/{result.run_uuid}/", timeout=10)
    assert resp.status_code == 200
    run = resp.json()
    samples = run["samples"]
    assert [s["index"] for s in samples] == [1, 2, 3]
    for s in samples:
        # Gemma may end its answer early (EOS): then "stop", else the 64-token budget.
        assert s["stop_reason"] in ("length", "stop")
        assert (s["tokens_generated"] == 64) == (s["stop_reason"] == "length")
        assert 2 <= s["tokens_generated"] <= 64
        assert s["prompt_tokens"] > 200  # the full prompt each time: cache_prompt is off
        assert s["draft_n"] > 0 and 0 <= s["draft_n_accepted"] <= s["draft_n"]
        assert s["decode_tokens_per_s_server"] > 0 and s["decode_tokens_per_s_client"] > 0
        assert s["prefill_tokens_per_s"] > 0 and s["ttft_ms"] > 0
        assert s["output_ok"] is False  # 64 tokens cannot hold a whole game
        assert (s["energy_j"], s["power_w_mean"], s["vram_peak_mib"]) == (None, None, None)
    assert run["extra"]["cached_prompt_tokens"] == [0, 0, 0]
    assert run["extra"]["power_unavailable_reason"]
    # What else used the rig while the repetitions ran: a share of the CPUs, measured (no GPU here).
    contention = run["extra"]["contention"]
    assert contention["over"] == "repetitions" and 0 <= contention["others_cpu_share"] <= 1
    assert contention["wall_s"] > 0 and contention["gpu_others_util_pct"] is None

    # The service's summary is the runner's statistics over the same raw samples.
    summary = run["summary"]
    expected = stats.summarize([s["decode_tokens_per_s_server"] for s in samples])
    assert expected is not None
    assert summary["n_samples"] == 3
    assert summary["decode_tokens_per_s_mean"] == pytest.approx(expected.mean)
    assert summary["decode_tokens_per_s_stdev"] == pytest.approx(expected.stdev)
    pooled = stats.acceptance_pct([s["draft_n"] for s in samples], [s["draft_n_accepted"] for s in samples])
    assert summary["acceptance_pct"] == pytest.approx(pooled)
    assert result.acceptance_pct == pytest.approx(pooled)
    assert f"| AVG | {expected.mean:.2f} |" in result.table

    points = {p["ctx_tokens"]: p for p in run["sweep_points"]}
    assert sorted(points) == [256, 512, 1024, 4096]
    for depth in (256, 512, 1024):
        point = points[depth]
        assert (point["prefill_tokens_per_s"] or 0) > 0 and (point["decode_tokens_per_s"] or 0) > 0, point["note"]
        assert point["note"] == ""  # the server processed exactly `depth` prompt tokens
    assert points[4096]["decode_tokens_per_s"] is None
    assert points[4096]["note"].startswith("skipped: needs 4128 tokens")
    assert [d["ctx_tokens"] for d in run["extra"]["sweep_deltas"]] == [256, 512, 1024]

    assert run["configuration"]["speculative_type"] == "draft"
    assert "--spec-type draft-simple" in run["configuration"]["command_line"]
    assert run["configuration"]["ctx_size"] == 2048
    assert run["model_file"]["sha256"] == GEMMA_SHA256
    assert run["model_file"]["quantization"] == "Q4_K_M"
    assert run["stack"]["engine"] == "llama.cpp" and run["stack"]["build"]  # from --version
    assert run["workload"]["name"] == "space-invaders-html" and len(run["workload"]["prompt_sha256"]) == 64
    assert run["fingerprint"]["cpu"] and run["fingerprint"]["gpus"] == []
    assert run["server_log_tail"]

    stored = Run.objects.get(uuid=result.run_uuid)
    assert stored.rig == cpu_rig[0] and stored.status == "finished"
    assert stored.samples.count() == 3 and stored.sweep_points.count() == 4


def test_the_client_and_server_clocks_agree(gemma_server: LlamaServer) -> None:
    workload = Workload.from_config(WorkloadConfig(max_tokens=64, repetitions=2, warmup=0, request_timeout_s=600))
    with PowerMonitor() as monitor:
        result = run_suite(gemma_server, workload, monitor=monitor)
    assert result.status == "finished"
    for sample in result.samples:
        assert sample.decode_tokens_per_s_client == pytest.approx(sample.decode_tokens_per_s_server, rel=0.05)
        assert not [f for f in sample.flags if f.startswith("decode_client_server_disagree")]
        assert sample.cached_prompt_tokens == 0


def test_the_cli_attaches_to_a_running_server_and_prints_the_table(
    gemma_server: LlamaServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "rig.json"
    config.write_text(json.dumps({"workload": {"max_tokens": 16, "warmup": 0}, "cache_dir": str(tmp_path)}))
    code = main(["attach", "--url", gemma_server.base_url, "--config", str(config), "--no-post", "--repetitions", "2"])
    out = capsys.readouterr().out
    assert code == 0, out
    lines = out.splitlines()
    assert lines[0] == "| run | t/s | draft_n | accepted | accept % |"
    assert lines[2].startswith("| 1 | ") and lines[3].startswith("| 2 | ")
    assert lines[4].startswith("| AVG | ")
    assert "delivery: not_posted" in out

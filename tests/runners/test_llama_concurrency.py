"""Concurrency sweeps end to end on the CPU: the real llama-server with Gemma 3 270M
(``--parallel 4``; levels 1, 2, 4), with and without Gemma as its own draft model,
through the runner (CLI, pipeline, a queued job in attach mode) into a live
Rigboard, read back through the API and checked against the per-request timings
llama-server itself printed in its log."""

from __future__ import annotations

import re
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import requests

from leaderboard.results.models import Rig
from runners.cli import main
from tests.fixtures.llama_jobs import job_spec, write_rig_config

pytestmark = pytest.mark.llama

LEVELS = [1, 2, 4]
REQUESTS = 4
# llama-server's per-request lines: "eval time = 120.33 ms / 16 tokens ( ... 132.97 tokens per second)"
# (not "prompt eval time") and "draft acceptance = 0.75000 (12 accepted / 16 generated)".
_EVAL = re.compile(r"(?<!prompt )eval time =\s*[\d.]+ ms /\s*(\d+) tokens \(.*?([\d.]+) tokens per second\)")
_DRAFT = re.compile(r"draft acceptance(?: rate)? = [\d.]+ \(\s*(\d+) accepted /\s*(\d+) generated\)")


LEVELS_WORKLOAD = {
    # Greedy: at the default temperature a request sometimes drew the end of generation as its
    # first token (1 token, no gap between tokens: seen once in CI, 2026-11-27).
    "temperature": 0.0,
    "seed": 42,
    "max_tokens": 16,
    "repetitions": 1,
    "warmup": 0,
    "concurrency_levels": LEVELS,
    "requests_per_level": REQUESTS,
}


def _server_log(tmp_path: Path, run_uuid: str) -> str:
    return (tmp_path / "cache" / "logs" / run_uuid / "llama-server.log").read_text(errors="replace")


def _check_levels(run: dict[str, Any], *, drafting: bool) -> None:
    levels = run["concurrency_levels"]
    assert [lv["concurrency"] for lv in levels] == LEVELS
    for level in levels:
        reqs = level["requests"]
        assert level["n_requests"] == REQUESTS == level["n_ok"] == len(reqs), level["note"]
        assert sorted(r["index"] for r in reqs) == list(range(1, REQUESTS + 1))
        assert {r["stream"] for r in reqs} <= set(range(1, level["concurrency"] + 1))
        for r in reqs:
            assert r["error"] == "" and 2 <= r["tokens_generated"] <= 16
            assert r["ttft_ms"] > 0 and r["decode_tokens_per_s_server"] > 0 and r["decode_tokens_per_s_client"] > 0
            # One gap per content chunk after the first: a token per chunk, less the end of
            # generation and pieces the server holds back (part of a UTF-8 character).
            assert 1 <= len(r["itl_ms"]) <= r["tokens_generated"] - 1
            assert sum(r["itl_ms"]) <= (r["ended_s"] - r["started_s"]) * 1000 - r["ttft_ms"] + 1
            if drafting:
                assert r["draft_n"] > 0 and 0 <= r["draft_n_accepted"] <= r["draft_n"]
            else:
                assert r["draft_n"] in (None, 0)
        # The service's statistics, recomputed here from the stored raw requests.
        decode = [r["decode_tokens_per_s_server"] for r in reqs]
        cuts = statistics.quantiles(decode, n=100, method="inclusive")
        assert level["decode_tokens_per_s_p50"] == pytest.approx(cuts[49])
        assert level["decode_tokens_per_s_p90"] == pytest.approx(cuts[89])
        tokens = sum(r["tokens_generated"] for r in reqs)
        span = max(r["ended_s"] for r in reqs) - min(r["started_s"] for r in reqs)
        assert level["output_tokens_per_s"] == pytest.approx(tokens / span)
        assert level["energy_j_per_token"] is None and "NVML" in level["stats_reasons"]["energy_j_per_token"]
        assert (level["acceptance_pct"] is not None) == drafting
    # At 4 streams the requests of the first wave really ran at once.
    first_wave = sorted(levels[2]["requests"], key=lambda r: r["started_s"])[:4]
    assert max(r["started_s"] for r in first_wave) < min(r["ended_s"] for r in first_wave)
    assert {r["stream"] for r in first_wave} == {1, 2, 3, 4}


def _check_against_the_server_log(run: dict[str, Any], log: str, *, drafting: bool) -> None:
    """Every request's server decode t/s and draft counts, as stored, are the ones
    llama-server printed for it (the log's t/s has two decimals)."""
    measured = [*run["samples"], *(r for lv in run["concurrency_levels"] for r in lv["requests"])]
    logged = sorted((int(n), round(float(tps), 2)) for n, tps in _EVAL.findall(log))
    stored = sorted((r["tokens_generated"], round(r["decode_tokens_per_s_server"], 2)) for r in measured)
    assert len(stored) == 1 + len(LEVELS) * REQUESTS
    assert logged == stored
    if drafting:
        logged_drafts = sorted((int(d), int(a)) for a, d in _DRAFT.findall(log))
        assert logged_drafts == sorted((r["draft_n"], r["draft_n_accepted"]) for r in measured)
    if not drafting:
        # The client's own clock agrees with the server's per request (a loose bound on a shared
        # 2-core box; benchmarks/concurrency_accuracy.py measures how close). With drafts, 16 tokens
        # arrive in a few bursts and the client's first-to-last interval is not the server's.
        for r in measured:
            assert r["decode_tokens_per_s_client"] == pytest.approx(r["decode_tokens_per_s_server"], rel=0.25)


@pytest.mark.parametrize("drafting", [True, False], ids=["gemma-drafts-for-itself", "no-draft"])
def test_the_runner_measures_levels_1_2_4_and_the_service_stores_them(
    live_server: Any,
    cpu_rig: tuple[Rig, str],
    gemma_server_section: Callable[..., dict[str, Any]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    drafting: bool,
) -> None:
    overrides: dict[str, Any] = {"parallel": 4, "ctx_size": 4096}
    if not drafting:
        overrides.update(spec_type="none", draft_model="", draft_n_max=None)
    server = gemma_server_section(**overrides)
    spec = job_spec(live_server.url, cpu_rig[1], server, tmp_path, workload=LEVELS_WORKLOAD, sweep={"enabled": False})
    assert main(["run", "--config", str(write_rig_config(tmp_path, spec))]) == 0
    printed = capsys.readouterr().out
    assert "| streams | requests ok | aggregate t/s |" in printed and "| 4 | 4/4 |" in printed

    runs = requests.get(f"{live_server.url}/api/runs/", timeout=10).json()["results"]
    run = requests.get(f"{live_server.url}/api/runs/{runs[0]['uuid']}/", timeout=10).json()
    assert run["status"] == "finished", run["failure_reason"]
    assert run["configuration"]["parallel"] == 4
    _check_levels(run, drafting=drafting)
    _check_against_the_server_log(run, _server_log(tmp_path, run["uuid"]), drafting=drafting)
    # Single-stream samples carry their inter-token gaps too (the run page's percentiles).
    assert all(1 <= len(s["itl_ms"]) <= s["tokens_generated"] - 1 for s in run["samples"])

    page = requests.get(f"{live_server.url}/runs/{Rig.objects.get().runs.get().pk}/?floor=1000", timeout=10).text
    assert 'id="latency"' in page and 'id="levels"' in page and "concurrency-fig" in page
    assert "per-stream decode falls below 1,000.0 t/s at 1 stream." in page


def test_a_queued_job_attached_to_a_running_server_measures_its_levels(
    rig_env: Any, gemma_server: Any, tmp_path: Path
) -> None:
    """Attach mode: no --parallel check (the session's server has one slot, so
    the streams queue on it), and the job spec carries the workload's levels."""
    from leaderboard.jobs.models import BenchmarkJob
    from leaderboard.jobs.services import job_dispatch_spec, jobs_enqueue
    from leaderboard.results.models import Run
    from runners.tasks import run_benchmark

    spec = {
        "attach": {"url": gemma_server.base_url},
        "workload": {"max_tokens": 16, "repetitions": 1, "warmup": 0, "concurrency_levels": [1, 2],
                     "requests_per_level": 2},
        "cache_dir": str(tmp_path / "cache"),
    }  # fmt: skip
    job = jobs_enqueue(rig=rig_env, kind="suite", spec=spec, time_limit_s=1800)  # a bound; a busy CI box is slow
    result = run_benchmark.apply(args=[job_dispatch_spec(job=job)]).get()
    assert result["status"] == "finished", result
    assert BenchmarkJob.objects.get(pk=job.pk).status == "finished"
    run = Run.objects.get(uuid=job.run_uuid)
    levels = list(run.concurrency_levels.order_by("concurrency"))
    assert [(lv.concurrency, lv.n_ok) for lv in levels] == [(1, 2), (2, 2)]
    assert all(lv.output_tokens_per_s and lv.ttft_ms_p50 for lv in levels)
    assert levels[1].requests.filter(draft_n__gt=0).count() == 2  # the session's server drafts with Gemma


def test_a_levels_energy_per_token_comes_from_nvml(gemma_server: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """There is no GPU here: a fake ``pynvml`` (tests/runners/test_power.py's) stands at
    the one boundary NVML is imported through; the requests are real."""
    import sys

    from runners.config import WorkloadConfig
    from runners.distribution import level_stats
    from runners.harness.concurrency import run_level
    from runners.harness.power import PowerMonitor
    from runners.harness.workload import Workload
    from tests.runners.test_power import fake_pynvml

    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml(watts=[200.0], energy_counter=[True]))
    workload = Workload.from_config(WorkloadConfig(max_tokens=8, repetitions=1, warmup=0))
    with PowerMonitor() as monitor:
        level = run_level(gemma_server, workload, concurrency=2, n_requests=2, monitor=monitor)
    assert not level.failed and level.wall_s is not None
    assert level.energy_j == pytest.approx(200.0 * level.wall_s, rel=0.1)
    stats = level_stats([r.payload() for r in level.requests], energy_j=level.energy_j)
    tokens = sum(r.sample.tokens_generated or 0 for r in level.requests)
    assert stats.energy_j_per_token == pytest.approx(level.energy_j / tokens)
    assert level.payload()["energy_j"] == level.energy_j

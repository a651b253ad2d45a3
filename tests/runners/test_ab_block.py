"""Interleaved A/B blocks on the real llama-server with Gemma 3 270M (tiny token
counts): an A/A block is not called a change, the run-level fallback runs when
the memory says two servers do not fit, and a confirmation beside a CPU hog is
held back and retried by the real rig worker's Celery retry, never judged."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import redis

from leaderboard.core.queues import rig_task_send
from leaderboard.regressions.ab import Decision, Plan
from leaderboard.regressions.ab_blocks import Block, blocks_judge
from runners.ab_design import AbDesign, ContentionCall, Side
from runners.builds.ab_block import run_block, run_confirmation
from runners.builds.ab_task import TASK_NAME, ab_blocks_run
from runners.config import RigConfig
from runners.harness.contention import process_ticks
from runners.harness.workload import Workload
from tests.fixtures.celery_worker import queued_messages
from tests.fixtures.waiting import wait_until

pytestmark = pytest.mark.llama

REPORTS = "test-ab-reports"


@pytest.fixture
def rig_config(llama_server_bin: Path, gemma_gguf: Path) -> dict[str, Any]:
    return {
        "server": {"binary": str(llama_server_bin), "model": str(gemma_gguf), "ctx_size": 512, "threads": 1,
                   "parallel": 1, "startup_timeout_s": 120.0, "stop_grace_s": 5.0},
        "workload": {"max_tokens": 8, "repetitions": 2, "warmup": 1, "temperature": 0.0, "seed": 42},
    }  # fmt: skip


def _parts(rig_config: dict[str, Any]) -> tuple[Any, Workload]:
    config = RigConfig.from_mapping(rig_config)
    assert config.server is not None
    return config.server, Workload.from_config(config.workload)


def test_an_a_a_block_is_not_called_a_change(rig_config: dict[str, Any], tmp_path: Path) -> None:
    server, workload = _parts(rig_config)
    blocks = [run_block(a=server, b=server, workload=workload, index=i, reps_per_side=2, log_dir=tmp_path)
              for i in range(2)]  # fmt: skip
    assert [b.error for b in blocks] == ["", ""]
    assert ["".join(b.sides) for b in blocks] == ["abba", "baab"]
    assert all(v is not None and v > 0 for b in blocks for v in b.samples)
    assert all(b.contention_a is not None and b.contention_a.others_cpu_s is not None for b in blocks)
    outcome = blocks_judge([Block(tuple(b.sides), tuple(b.samples)) for b in blocks], Plan(first_pairs=2, max_pairs=2))
    assert outcome.n_pairs == 2
    assert outcome.decision not in (Decision.REGRESSION, Decision.IMPROVEMENT), outcome.reason
    # Each block had its own two servers: four logs, one per process.
    assert len(list(tmp_path.glob("block*-*/llama-server.log"))) == 4


def test_the_run_level_fallback_runs_when_two_servers_do_not_fit(rig_config: dict[str, Any], tmp_path: Path) -> None:
    server, workload = _parts(rig_config)
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemAvailable: 1024 kB\n")  # 1 MiB free: no room for two servers
    record = run_confirmation(a=server, b=server, workload=workload, first_index=0, count=1, reps_per_side=2,
                              log_dir=tmp_path, meminfo=meminfo)  # fmt: skip
    assert record.choice.design == AbDesign.RUN_ABBA and "only 1 MiB free" in record.choice.reason
    (pair,) = record.blocks
    assert pair.error == "" and pair.sides == [Side.A, Side.A, Side.B, Side.B]  # one run of each, not alternated
    assert record.as_dict()["design"] == "run_abba"


@pytest.fixture
def cpu_hog() -> Iterator[list[subprocess.Popen[bytes]]]:
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(os.cpu_count() or 2)]
    try:
        wait_until(lambda: all(process_ticks(h.pid) > 0 for h in hogs), 30, "the hog to be busy")
        yield hogs
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait(timeout=10)


def test_a_batch_beside_a_cpu_hog_is_held_back(
    rig_config: dict[str, Any], cpu_hog: Any, llama_server_bin: Path
) -> None:
    binary = str(llama_server_bin)
    spec = {"confirmation_id": "aa-1", "a_commit": "x", "b_commit": "x", "binaries": {"x": binary},
            "config": rig_config, "count": 1, "reps_per_side": 2}  # fmt: skip
    report = ab_blocks_run(spec)
    assert report["status"] == "held_back", report
    assert report["blocks"][0]["contention"] == ContentionCall.HEAVY
    assert report["blocks"][0]["contention_a"]["others_cpu_share"] > 0.25


@pytest.mark.celery_worker
def test_the_rig_worker_retries_a_held_back_batch_then_reports_it(
    rig_config: dict[str, Any],
    cpu_hog: Any,
    llama_server_bin: Path,
    celery_broker: redis.Redis,
    rig_worker: Callable[..., Any],
) -> None:
    worker = rig_worker("ab-rig", token="unused", service_url="http://127.0.0.1:9")
    binary = str(llama_server_bin)
    spec = {"confirmation_id": "aa-7", "a_commit": "x", "b_commit": "x", "binaries": {"x": binary},
            "config": rig_config, "count": 1, "reps_per_side": 2, "retry_countdown_s": 0, "max_retries": 1,
            "report_queue": REPORTS, "report_task": "regressions.ab_report"}  # fmt: skip
    rig_task_send(task_name=TASK_NAME, spec=spec, queue="rig.ab-rig", task_id="ab-retry-test", time_limit=None)
    (message,) = wait_until(lambda: queued_messages(celery_broker, REPORTS), 300, "the rig's report")
    report = message["args"][0]
    assert report["confirmation_id"] == "aa-7" and report["status"] == "held_back"
    assert "held back by contention: retry 0" in worker.log()


def test_a_slowed_build_is_caught_by_interleaved_blocks(
    upstream: Any, built_llama_server: Callable[[], Any], rig_config: dict[str, Any], tmp_path: Path
) -> None:
    # The suite's slowdown commit (a pause in every decode step; the same commit the
    # nightly chains build, so both builds are usually in the cache).
    from runners.builds.build import BuildSpec, build
    from tests.fixtures.regressions import BUILD_CACHE, PORTABLE_FLAGS

    good = built_llama_server()
    slow_commit = upstream.commit_slowdown()
    slow = build(BuildSpec.from_flags_string(repo_url=upstream.url, commit=slow_commit, flags=PORTABLE_FLAGS),
                 BUILD_CACHE)  # fmt: skip
    assert good.ok and slow.ok, slow.log_tail[-2000:]
    server, workload = _parts(rig_config)
    a, b = replace(server, binary=good.binary_path), replace(server, binary=slow.binary_path)
    # Three blocks: with two, a t on 1 degree of freedom needs t > 64 at the 1% level.
    blocks = [run_block(a=a, b=b, workload=workload, index=i, reps_per_side=2, log_dir=tmp_path) for i in range(3)]
    outcome = blocks_judge([Block(tuple(r.sides), tuple(r.samples)) for r in blocks], Plan(first_pairs=3, max_pairs=3))
    assert outcome.effect_pct is not None and outcome.effect_pct < -50, outcome.reason  # a pause of 300 ms a token
    assert outcome.decision == Decision.REGRESSION, outcome.reason

"""The rig's nightly task with A/B runs: a run naming another commit uses that
commit's build (same flags), in the order the runs come; a baseline that cannot
be built fails its runs with the reason and the others still run.

The build itself is replaced here (it takes minutes; test_ab_chain.py runs the
real one); the task's choice of binary per run is what is under test."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from runners.builds import nightly
from runners.builds.build import BuildResult, BuildSpec
from runners.celery_app import RigEnv

A, B = "a" * 40, "b" * 40
ENV = RigEnv("redis://x", "http://svc", "tok", "rig-1", "", 3600, 60)


def _spec(runs: list[dict[str, Any]]) -> dict[str, Any]:
    return {"build": {"id": 7, "repo_url": "/repo", "commit": B, "flags": "-DGGML_CUDA=ON", "jobs": 2}, "runs": runs}


def _fake_build(fail: set[str]) -> Any:
    def build(spec: BuildSpec, cache_dir: Path) -> BuildResult:
        assert spec.flags == ("-DGGML_CUDA=ON",)  # the baseline is built with the candidate's flags
        status = "failed" if spec.commit in fail else "built"
        binary = "" if status == "failed" else f"/cache/{spec.commit[:4]}/llama-server"
        return BuildResult(spec.commit, status, 1.0, "cc", "", binary)

    return build


def test_each_run_uses_the_binary_of_its_commit_in_order(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(nightly, "build", _fake_build(set()))
    seen: list[tuple[str, str]] = []

    def run_job(config: Mapping[str, Any]) -> Any:
        seen.append((config["server"]["binary"], config["stack"]["build"]))
        return SimpleNamespace(status="finished", delivered="posted", failure_reason="")

    runs = [{"build_run_id": i, "run_uuid": f"u{i}", "config": {}, **({"commit": A} if side == "A" else {})}
            for i, side in enumerate("ABBA")]  # fmt: skip
    report = nightly.nightly_build_and_bench(_spec(runs), env=ENV, cache_dir=tmp_path, run_job=run_job)

    a_bin, b_bin = ("/cache/aaaa/llama-server", A), ("/cache/bbbb/llama-server", B)
    assert seen == [a_bin, b_bin, b_bin, a_bin]
    assert [r["status"] for r in report["runs"]] == ["finished"] * 4 and report["status"] == "built"


def test_a_baseline_that_does_not_build_fails_its_runs_only(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(nightly, "build", _fake_build({A}))
    ran: list[str] = []

    def run_job(config: Mapping[str, Any]) -> Any:
        ran.append(config["stack"]["build"])
        return SimpleNamespace(status="finished", delivered="posted", failure_reason="")

    runs = [{"build_run_id": 1, "run_uuid": "u1", "config": {}, "commit": A},
            {"build_run_id": 2, "run_uuid": "u2", "config": {}}]  # fmt: skip
    report = nightly.nightly_build_and_bench(_spec(runs), env=ENV, cache_dir=tmp_path, run_job=run_job)

    assert ran == [B]
    failed, finished = report["runs"]
    assert failed["status"] == "failed" and f"baseline build {A[:10]} failed" in failed["error"]
    assert finished["status"] == "finished"

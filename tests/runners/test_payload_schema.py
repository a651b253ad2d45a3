"""The runner checks the run it built against the service's own definition
(runners/delivery/schema.py) before delivering it: runs it wrote take no complaint, and a
figure the service would refuse is named by its path."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from runners.delivery.schema import Limits, payload_problems

RUNS = sorted(Path("leaderboard/results/demo_data/runs").glob("*.json"))


@pytest.mark.parametrize("path", RUNS, ids=[p.stem for p in RUNS])
def test_a_run_the_runner_wrote_has_no_problems(path):
    payload = json.loads(path.read_text(encoding="utf-8"))
    # Written with --no-post, so named for no rig: manage.py import_runs names it.
    assert payload_problems({**payload, "rig": "dev-vm"}) == {}


def test_it_names_what_the_service_would_refuse():
    payload = {**json.loads(RUNS[0].read_text(encoding="utf-8")), "rig": "dev-vm"}
    payload["samples"][1]["ttft_ms"] = -3.0
    payload["stack"]["engine"] = "llama.cpp-turbo"
    problems = payload_problems(payload, limits=Limits(sweep_points=0))
    assert set(problems) == {"samples.1.ttft_ms", "stack.engine"} | (
        {"sweep_points"} if payload["sweep_points"] else set()
    )
    assert problems["samples.1.ttft_ms"] == ["Ensure this value is greater than or equal to 0."]

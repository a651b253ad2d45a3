"""The run page's bound read off the run it already loaded (hardware/selectors.bound_of_loaded)
equals its reference, ``bounds_for_ids``'s three queries, on a varied set of runs: a GGUF
header and none, a rig mixing GPU models, a rig with no GPUs entered whose fingerprint lists
them, speculative decoding, a reported run without samples, samples whose prompt is
known for only some repetitions, a fingerprint whose keys hold no object."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from leaderboard.boards.selectors.runs import run_detail
from leaderboard.results.hardware.selectors import bound_of_loaded, bounds_for_ids
from leaderboard.results.models import RigGpu, Run, Sample
from tests.boards.test_bound_pages import HEADER

pytestmark = pytest.mark.django_db

GGUF = {"fingerprint": {"model": {"gguf": HEADER}, "memory": {"vram_total_mib": 24_576}}}
DENSE = {"model": "dense-8b", "quant": "Q8_0", "architecture": "dense", "spec": "none", "draft": None}


@pytest.fixture
def varied(board_run, reported_run) -> list[Run]:
    header = board_run(rig="rig-3090", gpus=[("RTX 3090", 1)], tps=[468.0, 470.0], run=GGUF, **DENSE)
    mixed = board_run(rig="mixed", gpus=[("RTX 3090", 2), ("RTX 4090", 1)], run=GGUF, model="m-mixed")
    listed = board_run(
        rig="not-entered",
        run={"fingerprint": {"gpus": [{"name": "NVIDIA GeForce RTX 3090", "vram_mib": 24_576}] * 2, "model": [1]}},
        **DENSE,
    )
    RigGpu.objects.filter(rig=listed.rig).delete()
    speculative = board_run(rig="rig-3090", run=GGUF, model="m-spec")
    odd = board_run(rig="rig-3090", run={"fingerprint": "not an object"}, **{**DENSE, "model": "m-odd"})
    reported = reported_run(decode=42.0)
    Sample.objects.filter(run=header).update(prompt_tokens=1_000)
    Sample.objects.filter(run=header, index=1).update(prompt_tokens=None, tokens_generated=333)
    return [header, mixed, listed, speculative, odd, reported]


def loaded(run: Run) -> Run:
    found = run_detail(run_id=run.pk)
    assert found is not None
    return found


def test_the_comparison_can_tell_two_bounds_apart(varied: list[Run]) -> None:
    before = bound_of_loaded(loaded(varied[0]))
    Sample.objects.filter(run=varied[0], index=2).update(prompt_tokens=60_000)

    assert bound_of_loaded(loaded(varied[0])) != before


def test_the_loaded_runs_bound_equals_the_read_one(varied: list[Run]) -> None:
    plain = bounds_for_ids([r.pk for r in varied])
    fast = {r.pk: bound_of_loaded(loaded(r)) for r in varied}

    assert fast == plain
    # The cases the set was made for are in it, so agreeing means something.
    header, mixed, listed, speculative, odd, reported = (plain[r.pk] for r in varied)
    assert header.bound is not None and header.facts.depth_tokens == 1_000 + (333 + 2000) / 2 / 2
    assert len(mixed.facts.gpus) == 2 and listed.facts.gpus == (("NVIDIA GeForce RTX 3090", 2, 24.0),)
    assert speculative.facts.speculative and odd.facts.header is None
    assert reported.facts.depth_tokens is None and header.facts.memory_detected == {"vram_total_mib": 24_576}


def test_the_loaded_runs_bound_costs_no_query(varied: list[Run]) -> None:
    run = loaded(varied[1])
    with CaptureQueriesContext(connection) as captured:
        bound_of_loaded(run)

    assert len(captured) == 0

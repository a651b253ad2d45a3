"""The campaign definition: every bad value is refused naming its field, before anything runs."""

from __future__ import annotations

import pytest

from runners.campaign.search import TrialResult, run_search
from runners.campaign.spec import CampaignSpec
from runners.config import ConfigError


def spec(**overrides):
    data = {"name": "t", "space": {"threads": [1, 2], "flash_attn": ["on", "off"]}, "budget": {"trials": 4}}
    data.update(overrides)
    return data


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"space": {"warp_drive": [1]}}, "space.warp_drive"),
        ({"space": {"threads": []}}, "space.threads"),
        ({"space": {"threads": {"min": 1, "max": 4, "step": 0}}}, "space.threads.step"),
        ({"space": {"threads": ["two"]}}, "space.threads.0"),
        ({"budget": {"trials": 0}}, "budget.trials"),
        ({"budget": {"wall_time_s": -5}}, "budget.wall_time_s"),
        ({"constraints": [{"metric": "happiness", "max": 1}]}, "constraints.0.metric"),
        ({"constraints": [{"metric": "vram_peak_mib"}]}, "constraints.0"),
        ({"strategy": "psychic"}, "strategy"),
        ({"objective": "vibes"}, "objective"),
        ({"repetitions": 0}, "repetitions"),
    ],
)
def test_it_names_the_bad_field(overrides, field):
    with pytest.raises(ConfigError) as caught:
        CampaignSpec.from_mapping(spec(**overrides))
    assert caught.value.field == field


def test_a_range_expands_to_its_values():
    parsed = CampaignSpec.from_mapping(spec(space={"n_gpu_layers": {"min": 10, "max": 18, "step": 4}}))
    assert parsed.space == {"n_gpu_layers": [10, 14, 18]}
    assert parsed.trial_budget() == 3  # capped by the grid


@pytest.mark.parametrize("strategy", ["grid", "random", "adaptive"])
def test_a_seeded_search_is_reproducible_and_never_measures_a_point_twice(strategy):
    space = {"threads": [1, 2, 3, 4], "cache_type_k": ["f16", "q8_0", "q4_0"]}
    parsed = CampaignSpec.from_mapping(spec(space=space, strategy=strategy, budget={"trials": 8}, seed=3))

    def measure(number, params, prune):
        # A landscape with one peak: 3 threads, q8_0.
        value = 10 - abs(params["threads"] - 3) - (0 if params["cache_type_k"] == "q8_0" else 2)
        return TrialResult(number=number, params=params, value=float(value))

    first = run_search(parsed, measure)
    second = run_search(parsed, measure)
    assert [t.params for t in first] == [t.params for t in second]
    assert len(first) == 8
    assert len({tuple(t.params.values()) for t in first}) == 8


def test_a_grid_search_stops_when_the_space_is_exhausted_and_failures_do_not_stop_it():
    parsed = CampaignSpec.from_mapping(spec(strategy="grid", budget={}))

    def measure(number, params, prune):
        if params["threads"] == 2:
            return TrialResult(number=number, params=params, state="failed", failure_kind="out_of_memory")
        return TrialResult(number=number, params=params, value=1.0)

    trials = run_search(parsed, measure)
    assert len(trials) == 4
    assert sorted(t.state for t in trials) == ["complete", "complete", "failed", "failed"]


def test_a_trial_clearly_below_the_median_after_its_first_repetition_is_pruned():
    space = {"threads": [1, 2, 3, 4, 5, 6, 7, 8]}
    parsed = CampaignSpec.from_mapping(spec(space=space, strategy="grid", budget={}, repetitions=3, seed=1))
    speed = {1: 5.0, 2: 9.0, 3: 12.0, 4: 14.0, 5: 15.0, 6: 15.5, 7: 2.0, 8: 1.0}
    repetitions_run = {}

    def measure(number, params, prune):
        samples = []
        for step in range(1, 4):
            samples.append(speed[params["threads"]])
            if step < 3 and prune(step, samples[-1]):
                repetitions_run[params["threads"]] = step
                return TrialResult(number, params, value=samples[-1], samples=samples, pruned=True)
        repetitions_run[params["threads"]] = 3
        return TrialResult(number, params, value=sum(samples) / 3, samples=samples)

    trials = run_search(parsed, measure)
    assert len(trials) == 8
    pruned = {t.params["threads"] for t in trials if t.pruned}
    # The first three trials set the median; a later one below it stops after one repetition.
    assert pruned and all(speed[t] < max(speed.values()) for t in pruned)
    assert all(repetitions_run[t] == 1 for t in pruned)
    assert all(repetitions_run[t.params["threads"]] == 3 for t in trials[:3])
    best = max((t for t in trials if not t.pruned), key=lambda t: t.value)
    assert best.params == {"threads": 6}

"""The verdict rule on constructed samples (pure: no database)."""

from __future__ import annotations

import random

import pytest

from leaderboard.regressions.verdict import (
    MIN_NOISE_RUNS,
    Kind,
    Rule,
    compare_url,
    judge,
    median_build,
    nearer_to_bad,
    noise_from_medians,
    run_median,
)


def _samples(rng: random.Random, median: float, spread_pct: float, n: int = 10) -> list[float]:
    return [median * (1 + rng.gauss(0, spread_pct / 100)) for _ in range(n)]


def test_it_flags_a_five_percent_slowdown_in_ten_vs_ten_samples() -> None:
    rng = random.Random(5)
    flagged = 0
    for _ in range(200):
        base = _samples(rng, 100.0, 1.0)
        new = _samples(rng, 95.0, 1.0)
        flagged += judge(new, base).kind == Kind.REGRESSION
    assert flagged >= 195, flagged


def test_it_does_not_flag_noise_of_the_same_spread() -> None:
    rng = random.Random(6)
    kinds = [judge(_samples(rng, 100.0, 1.0), _samples(rng, 100.0, 1.0)).kind for _ in range(500)]
    assert kinds.count(Kind.REGRESSION) + kinds.count(Kind.IMPROVEMENT) <= 2


def test_it_does_not_flag_a_significant_one_percent_change_at_the_three_percent_threshold() -> None:
    rng = random.Random(7)
    # Tight noise makes a 1% shift highly significant; the threshold still holds it back.
    outcomes = [judge(_samples(rng, 99.0, 0.1), _samples(rng, 100.0, 0.1)) for _ in range(100)]
    assert all(o.p_value is not None and o.p_value < 0.01 for o in outcomes)
    assert all(o.kind == Kind.NONE and "within" in o.reason for o in outcomes)


def test_it_calls_a_large_speedup_an_improvement_and_a_slower_ttft_a_regression() -> None:
    base = [100.0, 101.0, 99.0, 100.5, 99.5, 100.2, 99.8, 100.1, 99.9, 100.3]
    faster = [v * 1.1 for v in base]
    assert judge(faster, base).kind == Kind.IMPROVEMENT
    ttft_rule = Rule(higher_is_better=False)
    assert judge(faster, base, ttft_rule).kind == Kind.REGRESSION


def test_it_reports_p_value_and_effect_of_the_medians() -> None:
    base = [100.0] * 5 + [102.0] * 5
    new = [90.0] * 5 + [92.0] * 5
    outcome = judge(new, base)
    assert outcome.kind == Kind.REGRESSION
    assert outcome.baseline_median == 101.0 and outcome.new_median == 91.0
    assert outcome.effect_pct == pytest.approx(-9.90099, rel=1e-4)
    assert outcome.p_value is not None and outcome.p_value < 0.001
    assert (outcome.n_new, outcome.n_baseline) == (10, 10)


def test_it_makes_no_verdict_with_too_few_samples_or_identical_samples() -> None:
    assert judge([1.0, 2.0], [1.0, 2.0, 3.0]).kind == Kind.NONE
    assert judge([1.0, 2.0], [1.0, 2.0, 3.0]).p_value is None
    same = judge([50.0] * 10, [50.0] * 10)
    assert same.kind == Kind.NONE and same.p_value == 1.0


def test_it_drops_missing_and_non_finite_samples() -> None:
    outcome = judge([90.0] * 9 + [None, float("nan")], [100.0, 100.5, 99.5] * 3)
    assert outcome.n_new == 9


def test_the_alpha_and_threshold_are_configurable_and_checked() -> None:
    base = [100.0, 101.0, 99.0, 100.5, 99.5, 100.2, 99.8, 100.1, 99.9, 100.3]
    new = [v * 0.98 for v in base]
    assert judge(new, base).kind == Kind.NONE
    assert judge(new, base, Rule(threshold_pct=1.5)).kind == Kind.REGRESSION
    with pytest.raises(ValueError, match="alpha"):
        Rule(alpha=0)
    with pytest.raises(ValueError, match="threshold_pct"):
        Rule(threshold_pct=-1)


def test_median_build_picks_the_middle_build_not_an_outlier() -> None:
    builds = [[100.0, 101.0], [60.0, 61.0], [98.0, 99.0], [], [150.0]]
    assert median_build(builds) == 2
    assert median_build([[], []]) is None


def test_compare_url_is_made_for_github_like_urls_only() -> None:
    url = compare_url("https://github.com/ggml-org/llama.cpp.git", "a" * 40, "b" * 40)
    assert url == f"https://github.com/ggml-org/llama.cpp/compare/{'a' * 40}...{'b' * 40}"
    assert compare_url("/srv/git/llama.cpp", "a", "b") == ""
    assert compare_url("git@github.com:ggml-org/llama.cpp.git", "a", "b") == ""


# The run-to-run noise floor. A "run" here has its own offset (the drift
# between runs of one build on a busy machine) on top of the sample noise.


def _run(rng: random.Random, median: float, drift_pct: float, spread_pct: float, n: int = 10) -> list[float]:
    return _samples(rng, median * (1 + rng.gauss(0, drift_pct / 100)), spread_pct, n)


def test_noise_is_the_standard_deviation_of_log_run_medians_and_unknown_below_three_runs() -> None:
    noise = noise_from_medians([100.0, 102.0, 98.0, None, float("nan"), 0.0], k=5)
    assert noise.n_runs == 3 and noise.spread_pct == pytest.approx(2.0, abs=0.01)
    assert noise.floor_pct == pytest.approx(10.0, abs=0.01) and noise.known
    # A factor of e^0.1 either way: a 9.5% slowdown or a 10.5% speedup.
    assert noise.bounds_pct() == pytest.approx((-9.52, 10.52), abs=0.01)
    assert noise.contains(-9.4) and noise.contains(10.4) and not noise.contains(-9.6) and not noise.contains(10.6)
    assert noise.describe() == "noise floor -9.52%/+10.52% (5 × SD 2.00% of 3 runs)"
    two = noise_from_medians([100.0, 110.0])
    assert (two.n_runs, two.spread_pct, two.floor_pct, two.bounds_pct()) == (2, None, None, None)
    assert not two.contains(0.0)
    assert two.describe() == f"noise floor unknown: first builds (2 earlier runs, need {MIN_NOISE_RUNS})"
    assert run_median([3.0, None, 1.0, 2.0]) == 2.0 and run_median([None]) is None
    with pytest.raises(ValueError, match="noise_k"):
        Rule(noise_k=-1)


def test_a_floor_beyond_100_percent_still_lets_a_fourfold_slowdown_through() -> None:
    # Runs that drift by ~18% (SD) put the floor at a factor of ~2.5, not at "±90%",
    # under which no slowdown at all (at most -100%) could ever be flagged.
    noise = noise_from_medians([30.0, 24.0, 35.0])
    bounds = noise.bounds_pct()
    assert noise.floor_pct is not None and noise.floor_pct > 90 and bounds is not None
    assert -70 < bounds[0] < -55 and bounds[1] > 120
    base = [30.0 + 0.1 * i for i in range(10)]
    assert judge([v / 4 for v in base], base, Rule(), noise).kind == Kind.REGRESSION
    assert judge([v * 0.6 for v in base], base, Rule(), noise).kind == Kind.NONE


def test_a_midpoint_is_slow_when_nearer_the_regressed_build_as_a_ratio() -> None:
    assert nearer_to_bad(median=12.0, good=30.0, bad=10.0) is True
    assert nearer_to_bad(median=17.0, good=30.0, bad=10.0) is True  # the split: the geometric mean, 17.32
    assert nearer_to_bad(median=17.5, good=30.0, bad=10.0) is False
    assert nearer_to_bad(median=25.0, good=30.0, bad=10.0) is False
    assert nearer_to_bad(median=None, good=30.0, bad=10.0) is None
    assert nearer_to_bad(median=0.0, good=30.0, bad=10.0) is None


def test_a_change_within_the_run_to_run_noise_floor_is_not_flagged() -> None:
    # Two runs 6% apart with tight samples: the U test and the 3% threshold
    # both call it; earlier runs of the same build drift by ~3% (SD), so the
    # floor is 5 × 3% and 6% is within it.
    base = [100.0 + 0.1 * i for i in range(10)]
    new = [v * 0.94 for v in base]
    noise = noise_from_medians([100.0, 97.0, 103.0, 99.0, 101.5], k=5)
    assert judge(new, base).kind == Kind.REGRESSION  # the old rule: p and threshold only

    outcome = judge(new, base, Rule(), noise)

    assert outcome.kind == Kind.NONE
    assert outcome.p_value is not None and outcome.p_value < 0.01 and outcome.effect_pct == pytest.approx(-6.0)
    assert "within the noise floor -" in outcome.reason and outcome.noise is noise


def test_a_change_beyond_a_quiet_noise_floor_is_flagged_and_the_floor_is_reported() -> None:
    rng = random.Random(8)
    quiet = noise_from_medians([100.0, 100.3, 99.8, 100.1, 99.9])
    flagged = 0
    for _ in range(200):
        outcome = judge(_samples(rng, 95.0, 1.0), _samples(rng, 100.0, 1.0), Rule(), quiet)
        flagged += outcome.kind == Kind.REGRESSION
    assert flagged >= 195, flagged
    assert outcome.noise.floor_pct is not None and outcome.noise.floor_pct < 3
    if outcome.kind == Kind.REGRESSION:
        assert "and the noise floor -" in outcome.reason


def test_without_a_noise_floor_the_verdict_says_it_is_unknown() -> None:
    base = [100.0 + 0.1 * i for i in range(10)]
    outcome = judge([v * 0.9 for v in base], base, Rule(), noise_from_medians([100.0]))
    assert outcome.kind == Kind.REGRESSION
    assert outcome.reason.endswith("noise floor unknown: first builds (1 earlier run, need 3)")


def test_the_noise_floor_holds_the_false_positive_rate_of_drifting_runs_down() -> None:
    """A/A comparisons of runs that drift 4% (SD) from run to run with 1% sample
    noise, as on a loaded machine: the U test finds most pairs "significant";
    with the floor measured on five earlier runs, almost none is flagged."""
    rng = random.Random(9)
    old = new = 0
    trials = 400
    for _ in range(trials):
        runs = [_run(rng, 100.0, 4.0, 1.0) for _ in range(6)]
        history, latest = runs[:5], runs[5]
        noise = noise_from_medians([run_median(r) for r in history])
        old += judge(latest, history[-1]).kind != Kind.NONE
        new += judge(latest, history[-1], Rule(), noise).kind != Kind.NONE
    assert old / trials > 0.3, old
    assert new / trials < 0.03, new


def test_a_large_slowdown_still_clears_a_noisy_floor() -> None:
    rng = random.Random(10)
    caught = 0
    for _ in range(200):
        history = [_run(rng, 100.0, 4.0, 1.0) for _ in range(5)]
        noise = noise_from_medians([run_median(r) for r in history])
        slow = _run(rng, 50.0, 4.0, 1.0)
        caught += judge(slow, history[-1], Rule(), noise).kind == Kind.REGRESSION
    assert caught >= 190, caught

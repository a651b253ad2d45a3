"""The verdict rule on constructed samples (pure: no database)."""

from __future__ import annotations

import random

import pytest

from leaderboard.regressions.verdict import Kind, Rule, compare_url, judge, median_build


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

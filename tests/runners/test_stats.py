"""runners/stats.py: the one decode rule and the one significance test the
runner, the compare page, the verdicts and the benchmarks share."""

from __future__ import annotations

import math
import statistics

import pytest
from scipy import stats as scipy_stats

from runners.stats import (
    MIN_NOISE_RUNS,
    NOISE_K_ALERT,
    NOISE_K_DESCRIBE,
    decode_tokens_per_s,
    run_noise,
    run_noise_from_log_sums,
    significance,
)


def test_the_server_figure_wins_whenever_it_exists_even_zero() -> None:
    assert decode_tokens_per_s(server=41.5, client=40.0) == 41.5
    assert decode_tokens_per_s(server=0.0, client=40.0) == 0.0
    assert decode_tokens_per_s(server=None, client=40.0) == 40.0
    assert decode_tokens_per_s(server=None, client=None) is None


def test_significance_agrees_with_scipy_on_ordinary_samples() -> None:
    a, b = [10.0, 10.4, 9.8, 10.1, 10.3], [9.1, 9.4, 9.0, 9.3, 9.6]
    mw = significance(a, b)
    assert mw.p_value == pytest.approx(scipy_stats.mannwhitneyu(a, b, alternative="two-sided").pvalue)
    welch = significance(a, b, test="welch")
    expected = scipy_stats.ttest_ind(a, b, equal_var=False)
    assert (welch.statistic, welch.p_value) == pytest.approx((expected.statistic, expected.pvalue))


@pytest.mark.parametrize("test", ["mannwhitney", "welch"])
def test_constant_samples_give_one_p_value_policy(test: str) -> None:
    # Nothing to tell apart: p = 1 (from scipy, or from the NaN policy where scipy gives NaN).
    assert significance([5.0, 5.0, 5.0], [5.0, 5.0], test=test).p_value == 1.0
    # Two different constants: Mann–Whitney still ranks them; Welch's t is infinite (p = 0).
    differ = significance([5.0, 5.0, 5.0], [7.0, 7.0, 7.0], test=test)
    assert differ.p_value < 0.2


def test_an_unknown_test_is_an_error_naming_it() -> None:
    with pytest.raises(ValueError, match="'median'"):
        significance([1.0, 2.0], [1.0, 2.0], test="median")


def test_run_to_run_noise_is_one_rule_with_k_per_use():
    """One definition (log-scale SD of run medians, from three runs) for the compare
    view and the regression verdict; only k differs, and the SQL path agrees."""
    medians = [100.0, 102.0, 98.0, 101.0]
    logs = [math.log(m) for m in medians]
    expected_spread = 100.0 * statistics.stdev(logs)
    describe, alert = run_noise(medians, k=NOISE_K_DESCRIBE), run_noise(medians, k=NOISE_K_ALERT)
    assert describe.spread_pct == pytest.approx(expected_spread) == alert.spread_pct
    assert describe.floor_pct == pytest.approx(2 * expected_spread) and alert.floor_pct == pytest.approx(
        5 * expected_spread
    )
    summed = run_noise_from_log_sums(n=4, sum_logs=sum(logs), sum_log_squares=sum(x * x for x in logs), k=2)
    assert summed.floor_pct == pytest.approx(describe.floor_pct, rel=1e-9)
    # A 4% change is beyond 2 SDs of these runs (3.4%), not beyond 5 (8.5%).
    assert not describe.contains(4.0) and alert.contains(4.0) and describe.contains(3.0)
    # Two runs give no usable floor, on either path; zeros and gaps measured nothing.
    assert MIN_NOISE_RUNS == 3 and run_noise([100.0, 110.0, 0.0, None], k=2).floor_pct is None
    assert run_noise_from_log_sums(n=2, sum_logs=9.2, sum_log_squares=42.3, k=2).known is False

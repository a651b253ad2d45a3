"""runners/stats.py: the one decode rule and the one significance test the
runner, the compare page, the verdicts and the benchmarks share."""

from __future__ import annotations

import pytest
from scipy import stats as scipy_stats

from runners.stats import decode_tokens_per_s, significance


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

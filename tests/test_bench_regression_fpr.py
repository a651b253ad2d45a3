"""The verdict benchmark's pairings: all ordered pairs, and nightly order where
run j is judged against run j-1 with only earlier runs as history. (The
benchmark itself prints figures; it is not a timed test.)"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import regression_fpr  # noqa: E402

from leaderboard.regressions.verdict import MIN_NOISE_RUNS, Kind, Rule  # noqa: E402


def test_nightly_order_judges_each_run_against_the_one_before_with_only_earlier_history():
    pairs = regression_fpr.nightly_pairs(6)
    assert pairs == [(j - 1, j) for j in range(MIN_NOISE_RUNS, 6)]
    for i, j in pairs:
        history = regression_fpr.history_up_to(i, j, 10, 6)
        assert history[-1] == i and all(h < j for h in history)
    assert regression_fpr.history_up_to(4, 5, 3, 6) == [2, 3, 4]


def test_all_pairs_are_every_ordered_pair_and_the_cyclic_history_never_holds_the_new_run():
    assert len(regression_fpr.all_pairs(5)) == 20
    assert regression_fpr.history_of(0, 4, 3, 5) == [0, 3, 2]


def test_a_drifted_run_is_flagged_by_the_old_rule_and_held_back_by_a_noisy_floor():
    base = [100.0 + 0.1 * k for k in range(10)]
    runs = [[v * f for v in base] for f in (1.00, 1.04, 0.96, 1.00, 0.95)]
    rule = Rule()
    old = regression_fpr.old_judge(runs, rule)
    new = regression_fpr.new_judge(runs, rule, 4, regression_fpr.history_up_to)
    assert old(1.0, 3, 4) == Kind.REGRESSION  # -5%, p tiny: the old rule calls drift a regression
    assert new(1.0, 3, 4) == Kind.NONE  # history swings ±4%: 5 x SD is far beyond 5%
    changes, regressions, detection = regression_fpr.rates(runs, old, [(3, 4), (1, 2)])
    assert (changes, regressions) == (2, 2) and detection[40.0] == 1.0
    changes, regressions, _ = regression_fpr.rates(runs, old, [(2, 1)])  # +8.3%: a change, no regression
    assert (changes, regressions) == (1, 0)


def test_the_bound_is_clopper_pearson_so_zero_of_n_is_about_three_over_n():
    assert 0.0099 < regression_fpr.upper_bound_95(0, 300) < 0.0100  # rule of three: < 1% needs ~300 clean pairs
    assert 0.051 < regression_fpr.upper_bound_95(0, 57) < 0.052
    assert regression_fpr.upper_bound_95(17, 1554) > 17 / 1554
    assert regression_fpr.upper_bound_95(5, 5) == 1.0


def test_saved_sets_are_judged_alone_then_summed(tmp_path, capsys, monkeypatch):
    import json

    base = [100.0 + 0.2 * k for k in range(10)]
    paths = []
    for name, factors in (("a", (1.0, 1.01, 0.99, 1.0, 1.005, 0.995)), ("b", (1.0, 0.99, 1.0, 1.01, 1.0))):
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps({"runs": [[v * f for v in base] for f in factors], "meta": {}}))
        paths.append(str(path))
    monkeypatch.setattr(sys, "argv", ["regression_fpr.py", "--from-json", *paths])
    assert regression_fpr.main() == 0
    out = capsys.readouterr().out
    assert "=== 2 sets together ===" in out
    # nightly order: 6 runs give 3 pairs, 5 runs give 2; all pairs: 30 + 20
    assert "A/A pairs, nightly order (run j vs run j-1, history up to j-1): 5" in out
    assert "A/A pairs, all ordered pairs (any baseline, history cyclic): 50" in out


def test_one_outlier_run_is_not_confirmed_by_the_run_after_it_but_a_real_slowdown_is():
    base = [100.0 + 0.1 * k for k in range(10)]
    # Quiet history (±0.5%), then run 5 an outlier 10% slow, run 6 back to normal.
    runs = [[v * f for v in base] for f in (1.0, 1.005, 0.995, 1.0, 1.003, 0.90, 1.0)]
    rule = Rule()
    unconfirmed = regression_fpr.new_judge(runs, rule, 10, regression_fpr.history_up_to)
    confirmed = regression_fpr.confirmed_judge(runs, rule, 10, regression_fpr.history_up_to)
    assert unconfirmed(1.0, 4, 5) == Kind.REGRESSION  # the outlier alone is beyond the quiet floor
    assert confirmed(1.0, 4, 5) == Kind.NONE  # the re-run (run 6) shows no change
    assert confirmed(0.9, 3, 4) == Kind.REGRESSION  # a real 10% slowdown shows in the re-run too
    assert regression_fpr.confirmable_pairs([(4, 5), (5, 6), (6, 5)], 7) == [(4, 5)]


def test_orders_nightly_skips_the_all_pairs_stress_test(tmp_path, capsys, monkeypatch):
    import json

    path = tmp_path / "a.json"
    base = [100.0 + 0.2 * k for k in range(10)]
    path.write_text(json.dumps({"runs": [[v * f for v in base] for f in (1.0, 1.01, 0.99, 1.0, 1.005)], "meta": {}}))
    monkeypatch.setattr(sys, "argv", ["regression_fpr.py", "--orders", "nightly", "--from-json", str(path)])
    assert regression_fpr.main() == 0
    out = capsys.readouterr().out
    assert "nightly order" in out and "all ordered pairs" not in out

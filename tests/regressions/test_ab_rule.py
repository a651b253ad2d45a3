"""The A/B rule alone (regressions/ab.py): the group-sequential boundary, the
equivalence stop, and its error rates on simulated pairs whose truth is known."""

from __future__ import annotations

import math
import random

import pytest
from scipy import stats

from leaderboard.regressions.ab import Decision, Pair, Plan, ab_judge, ab_order


def test_the_looks_spend_exactly_alpha_and_almost_nothing_early() -> None:
    plan = Plan(alpha=0.01, first_pairs=4, step_pairs=2, max_pairs=8)
    assert plan.looks() == [4, 6, 8]
    assert sum(plan.alpha_at(n) for n in plan.looks()) == pytest.approx(0.01)
    # O'Brien–Fleming at half the information: 2 - 2 Phi(z_0.995 / sqrt(0.5)).
    assert plan.alpha_at(4) == pytest.approx(2 - 2 * stats.norm.cdf(stats.norm.ppf(0.995) / math.sqrt(0.5)))
    assert plan.alpha_at(4) < plan.alpha_at(6) < plan.alpha_at(8)
    assert [plan.next_batch(n) for n in (0, 4, 6, 8)] == [4, 2, 2, 0]


def test_pairs_alternate_abba() -> None:
    assert "".join("AB" if ab_order(i) else "BA" for i in range(4)) == "ABBAABBA"


def test_bad_plans_are_refused_with_the_reason() -> None:
    with pytest.raises(ValueError, match="first_pairs"):
        Plan(first_pairs=6, max_pairs=4)
    with pytest.raises(ValueError, match="alpha"):
        Plan(alpha=1.5)


def test_failed_runs_are_dropped_and_too_few_pairs_continue() -> None:
    outcome = ab_judge([Pair(100.0, 0.0), Pair(100.0, 90.0), Pair(100.0, 91.0), Pair(float("nan"), 90.0)])
    assert outcome.decision == Decision.CONTINUE and outcome.n_pairs == 2


def _simulate(effect: float, sd: float, trials: int, seed: int) -> dict[Decision, int]:
    """Run the sequential rule on simulated pairs (log ratio ~ N(ln(1+effect), sd))."""
    rng = random.Random(seed)
    plan = Plan()
    counts: dict[Decision, int] = {}
    for _ in range(trials):
        pairs: list[Pair] = []
        while True:
            pairs += [Pair(100.0, 100.0 * math.exp(rng.gauss(math.log1p(effect), sd)))
                      for _ in range(plan.next_batch(len(pairs)))]  # fmt: skip
            decision = ab_judge(pairs, plan).decision
            if decision != Decision.CONTINUE:
                break
        counts[decision] = counts.get(decision, 0) + 1
    return counts


def test_aa_pairs_are_called_a_change_below_alpha_and_a_clear_slowdown_is_caught() -> None:
    # A/A with pairs 2% apart (SD of a log ratio): the level is 1% and the threshold cuts more.
    aa = _simulate(0.0, 0.02, 2000, seed=1)
    assert aa.get(Decision.REGRESSION, 0) + aa.get(Decision.IMPROVEMENT, 0) <= 20
    assert aa.get(Decision.NONE, 0) > 1500  # most stop early at "no change"
    # The same rule can tell a change apart: 10% slower with the same noise.
    slow = _simulate(-0.10, 0.02, 500, seed=2)
    assert slow.get(Decision.REGRESSION, 0) >= 490
    assert slow.get(Decision.IMPROVEMENT, 0) == 0

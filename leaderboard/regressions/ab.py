"""The A/B confirmation rule, pure: paired run medians in, a decision out. No Django here.

A build judged a change is confirmed by running the baseline build (A) and the
candidate build (B) *interleaved* on the same rig, in ABBA order (A B, B A,
A B, B A …), each run a full reference run. Pair i gives one figure, the log
ratio of the two run medians, d_i = ln(B_i / A_i). Drift that is slow against
one pair (thermal state, a neighbour, a frequency step) moves A and B alike
and cancels in d_i; the ABBA order also cancels a linear trend across the
block, which a plain A B A B order would turn into a bias. A re-run made after
the first run cannot do this: a speed step between the baseline's night and
the candidate's looks like a change twice (benchmarks/README.md).

The test: a one-sample t-test of the d_i against 0 (two-sided), i.e. a
paired t-test on log throughput, with a group-sequential boundary:

- looks after ``first_pairs`` pairs, then every ``step_pairs`` more, up to
  ``max_pairs``; at look k, with information fraction t_k = n_k / max_pairs,
  the test may spend alpha(t_k) - alpha(t_(k-1)) of the level, where alpha(t)
  is the Lan–DeMets O'Brien–Fleming-type spending function
  2 - 2 Phi(z_(1-alpha/2) / sqrt t). Testing each look at its own increment
  is the Bonferroni bound of the group-sequential test: the chance of any
  false call over all looks is at most the sum of the increments, alpha,
  whatever the correlation between looks (exact boundaries would be slightly
  less strict; this bound needs no numerical integration to be valid).
  O'Brien–Fleming spends almost nothing early, so a first look with four
  noisy pairs only stops for a change that is unmistakable, and the last
  look is tested at nearly the full level.
- a change is called only when it is significant at the look *and* the mean
  effect is beyond ``threshold_pct`` (as the one-run rule, verdict.py);
- "no change" is called early when the 90% confidence interval of the mean
  log ratio lies within ±threshold (two one-sided tests at 5%, the usual
  equivalence test): more pairs could not make it a change beyond the threshold;
- otherwise more pairs are run; at ``max_pairs`` the answer is inconclusive,
  which does not confirm the change (no alarm on a rig too noisy to tell).

Why a t-test and not the sign or Wilcoxon signed-rank test: with at most
eight pairs their exact p cannot go below 2/2^n (0.0078 at n = 8, 0.125 at
n = 4), so no early look could ever stop for a change at alpha = 0.01. A
log ratio of two run medians is near normal (each median of several
repetitions; the log makes a multiplicative slowdown additive), and the
t-test uses the spread of the pairs themselves, so a noisy rig needs a
larger effect on its own evidence. SciPy does the t distribution.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from scipy import stats

from leaderboard.regressions.verdict import Kind

DEFAULT_AB_FIRST_PAIRS = 4
DEFAULT_AB_STEP_PAIRS = 2
DEFAULT_AB_MAX_PAIRS = 8
# The equivalence test's level for stopping early with "no change".
EQUIVALENCE_ALPHA = 0.05


class Decision(StrEnum):
    REGRESSION = "regression"
    IMPROVEMENT = "improvement"
    NONE = "none"  # equivalent within the threshold: no change
    INCONCLUSIVE = "inconclusive"  # at the limit, neither: the change is not confirmed
    CONTINUE = "continue"  # add pairs

    @property
    def kind(self) -> Kind:
        """Return the verdict kind this answer gives (no change for inconclusive; continue is no answer yet)."""
        return _KINDS.get(self, Kind.NONE)


_KINDS = {Decision.REGRESSION: Kind.REGRESSION, Decision.IMPROVEMENT: Kind.IMPROVEMENT}


@dataclass(frozen=True)
class Pair:
    """One A/B pair: the run medians of the baseline (A) and candidate (B)
    build, and whether A ran first."""

    a_median: float
    b_median: float
    a_first: bool = True

    @property
    def log_ratio(self) -> float:
        return math.log(self.b_median / self.a_median)


@dataclass(frozen=True)
class Plan:
    """How many pairs the sequential rule runs: ``first_pairs``, then
    ``step_pairs`` more at a time, at most ``max_pairs``."""

    alpha: float = 0.01
    threshold_pct: float = 3.0
    first_pairs: int = DEFAULT_AB_FIRST_PAIRS
    step_pairs: int = DEFAULT_AB_STEP_PAIRS
    max_pairs: int = DEFAULT_AB_MAX_PAIRS
    higher_is_better: bool = True

    def __post_init__(self) -> None:
        if not 0 < self.alpha < 1:
            raise ValueError(f"alpha must be between 0 and 1, got {self.alpha}")
        if self.first_pairs < 2 or self.step_pairs < 1 or self.max_pairs < self.first_pairs:
            raise ValueError(
                f"need 2 <= first_pairs <= max_pairs and step_pairs >= 1, got "
                f"{self.first_pairs}/{self.step_pairs}/{self.max_pairs}"
            )

    def looks(self) -> list[int]:
        """Return the pair counts at which the rule looks (the last is max_pairs)."""
        out = list(range(self.first_pairs, self.max_pairs, self.step_pairs))
        return [*out, self.max_pairs]

    def next_batch(self, n_pairs: int) -> int:
        """Return how many pairs to add after ``n_pairs`` (0 at the limit)."""
        return max(0, next((n for n in self.looks() if n > n_pairs), n_pairs) - n_pairs)

    def spent(self, n_pairs: int) -> float:
        """Return the cumulative alpha spent by ``n_pairs`` pairs (O'Brien–Fleming type)."""
        t = min(1.0, n_pairs / self.max_pairs)
        if t <= 0:
            return 0.0
        z = stats.norm.ppf(1 - self.alpha / 2)
        return float(2 - 2 * stats.norm.cdf(z / math.sqrt(t)))

    def alpha_at(self, n_pairs: int) -> float:
        """Return the level the look at ``n_pairs`` pairs is tested at: the
        alpha spent since the previous look."""
        earlier = [n for n in self.looks() if n < n_pairs]
        return self.spent(n_pairs) - (self.spent(earlier[-1]) if earlier else 0.0)


def ab_order(index: int) -> bool:
    """Return True if A runs first in pair ``index`` (ABBA ABBA …: A first in even pairs)."""
    return index % 2 == 0


@dataclass(frozen=True)
class AbOutcome:
    """The decision after ``n_pairs`` pairs with the figures behind it: the
    mean log ratio as a percent change, its 95% confidence interval (percent),
    the p-value of the paired t-test, the level this look was tested at, and
    the pairs' spread (SD of the log ratios × 100, about the CV of a pair)."""

    decision: Decision
    n_pairs: int
    effect_pct: float | None
    ci_low_pct: float | None
    ci_high_pct: float | None
    p_value: float | None
    alpha_at_look: float
    spread_pct: float | None
    reason: str


def _pct(log_ratio: float) -> float:
    return 100.0 * math.expm1(log_ratio)


def ab_judge(pairs: Sequence[Pair], plan: Plan | None = None, *, unit: str = "pairs") -> AbOutcome:
    """Return the sequential decision for these pairs (``unit`` names them in
    the reason: regressions/ab_blocks.py judges blocks by this rule).

    Pairs with a non-positive or non-finite median are dropped (a failed run).
    Below two usable pairs, or before the first look, the decision is CONTINUE
    (INCONCLUSIVE once nothing more may be added). All log ratios equal
    (no spread) gives p = 0 for a non-zero effect and p = 1 for none."""
    plan = plan or Plan()
    usable = [
        p
        for p in pairs
        if p.a_median > 0 and p.b_median > 0 and math.isfinite(p.a_median) and math.isfinite(p.b_median)
    ]
    n = len(usable)
    at_limit = len(pairs) >= plan.max_pairs
    alpha_look = plan.alpha_at(min(max(len(pairs), plan.first_pairs), plan.max_pairs))
    if n < 2 or len(pairs) < plan.first_pairs:
        decision = Decision.INCONCLUSIVE if at_limit else Decision.CONTINUE
        return AbOutcome(decision, n, None, None, None, None, alpha_look, None, f"{n} usable {unit}")
    d = [p.log_ratio for p in usable]
    mean = statistics.fmean(d)
    sd = statistics.stdev(d)
    se = sd / math.sqrt(n)
    if se == 0:
        p_value = 0.0 if mean != 0 else 1.0
        ci = (mean, mean)
        ci90 = ci
    else:
        p_value = float(stats.ttest_1samp(d, 0.0).pvalue)
        t95 = float(stats.t.ppf(0.975, n - 1))
        t90 = float(stats.t.ppf(1 - EQUIVALENCE_ALPHA, n - 1))
        ci = (mean - t95 * se, mean + t95 * se)
        ci90 = (mean - t90 * se, mean + t90 * se)
    effect = _pct(mean)
    bound = math.log1p(plan.threshold_pct / 100.0)
    figures = f"{n} {unit}, effect {effect:+.2f}% (95% CI {_pct(ci[0]):+.2f}%..{_pct(ci[1]):+.2f}%), p={p_value:.2g}"
    if p_value < alpha_look and abs(effect) > plan.threshold_pct:
        worse = mean < 0 if plan.higher_is_better else mean > 0
        decision = Decision.REGRESSION if worse else Decision.IMPROVEMENT
        reason = f"A/B {figures} < {alpha_look:.2g} at this look, beyond ±{plan.threshold_pct}%"
    elif -bound < ci90[0] and ci90[1] < bound:
        decision = Decision.NONE
        reason = f"A/B {figures}: 90% CI within ±{plan.threshold_pct}%, no change"
    elif at_limit:
        decision = Decision.INCONCLUSIVE
        reason = f"A/B {figures}: inconclusive at the limit of {plan.max_pairs} {unit}"
    else:
        decision = Decision.CONTINUE
        reason = f"A/B {figures}: inconclusive at {alpha_look:.2g}, more {unit}"
    return AbOutcome(decision, n, effect, _pct(ci[0]), _pct(ci[1]), p_value, alpha_look, 100.0 * sd, reason)

"""The verdict rule, pure: raw samples in, a verdict out. No Django here.

A change is called only when it is both *significant* (two-sided Mann–Whitney U
on the raw per-repetition samples, p below ``alpha``) and *large* (the relative
change of the medians beyond ``threshold_pct``). Significance alone flags tiny
real shifts once there are enough samples; size alone flags noise. Medians,
not means, so one stalled repetition does not move the effect.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from scipy.stats import mannwhitneyu

DEFAULT_ALPHA = 0.01
DEFAULT_THRESHOLD_PCT = 3.0
# Below this many samples on either side the exact U test cannot reach
# p < 0.01 at all (3 vs 3 bottoms out at p = 0.1), so no verdict is made.
MIN_SAMPLES = 3


class Kind(StrEnum):
    REGRESSION = "regression"
    IMPROVEMENT = "improvement"
    NONE = "none"


@dataclass(frozen=True)
class Rule:
    """What counts as a change: significance level, minimum effect, and the
    direction in which the metric is better (decode t/s: higher; TTFT: lower)."""

    alpha: float = DEFAULT_ALPHA
    threshold_pct: float = DEFAULT_THRESHOLD_PCT
    higher_is_better: bool = True

    def __post_init__(self) -> None:
        if not 0 < self.alpha < 1:
            raise ValueError(f"alpha must be between 0 and 1, got {self.alpha}")
        if self.threshold_pct < 0:
            raise ValueError(f"threshold_pct must not be negative, got {self.threshold_pct}")


@dataclass(frozen=True)
class Outcome:
    """A verdict with the figures behind it. ``p_value`` and ``effect_pct`` are
    None when there were too few samples to test (``reason`` says so)."""

    kind: Kind
    p_value: float | None
    effect_pct: float | None
    new_median: float | None
    baseline_median: float | None
    n_new: int
    n_baseline: int
    reason: str


def _clean(values: Sequence[float | None]) -> list[float]:
    return [float(v) for v in values if v is not None and math.isfinite(float(v))]


def judge(new: Sequence[float | None], baseline: Sequence[float | None], rule: Rule | None = None) -> Outcome:
    """Return the verdict for ``new`` samples against ``baseline`` samples.

    Missing and non-finite samples are dropped. With fewer than MIN_SAMPLES on
    either side, or a baseline median of 0, return kind NONE with no p-value."""
    rule = rule or Rule()
    a, b = _clean(new), _clean(baseline)
    if len(a) < MIN_SAMPLES or len(b) < MIN_SAMPLES:
        return Outcome(Kind.NONE, None, None, None, None, len(a), len(b), f"too few samples (need {MIN_SAMPLES})")
    new_median, base_median = statistics.median(a), statistics.median(b)
    if base_median == 0:
        return Outcome(Kind.NONE, None, None, new_median, base_median, len(a), len(b), "baseline median is 0")
    effect_pct = 100.0 * (new_median - base_median) / base_median
    p_value = float(mannwhitneyu(a, b, alternative="two-sided").pvalue)
    if math.isnan(p_value):
        # Every sample identical on both sides: nothing to tell apart.
        p_value = 1.0
    if p_value >= rule.alpha:
        kind, reason = Kind.NONE, f"not significant (p={p_value:.3g} ≥ {rule.alpha})"
    elif abs(effect_pct) <= rule.threshold_pct:
        kind, reason = Kind.NONE, f"effect {effect_pct:+.2f}% within ±{rule.threshold_pct}%"
    else:
        worse = effect_pct < 0 if rule.higher_is_better else effect_pct > 0
        kind = Kind.REGRESSION if worse else Kind.IMPROVEMENT
        reason = f"p={p_value:.3g} < {rule.alpha} and effect {effect_pct:+.2f}%"
    return Outcome(kind, p_value, effect_pct, new_median, base_median, len(a), len(b), reason)


def median_build(builds: Sequence[Sequence[float | None]]) -> int | None:
    """Return the index of the build whose sample median is the median of the
    builds' medians (the lower middle one for an even count); None if no build
    has samples. Used as the baseline "median of the last N builds": one odd
    build, fast or slow, does not become the baseline, and the chosen build's
    raw samples stay available for the U test."""
    medians = [(statistics.median(c), i) for i, c in enumerate(_clean(s) for s in builds) if c]
    if not medians:
        return None
    medians.sort()
    return medians[(len(medians) - 1) // 2][1]


def compare_url(repo_url: str, old_commit: str, new_commit: str) -> str:
    """Return the upstream compare view for a GitHub-like repository URL
    (``<repo>/compare/<old>...<new>``); '' for other URLs (local paths, ssh)."""
    url = repo_url.strip().removesuffix("/").removesuffix(".git")
    if not url.startswith(("https://", "http://")) or not old_commit or not new_commit:
        return ""
    return f"{url}/compare/{old_commit}...{new_commit}"

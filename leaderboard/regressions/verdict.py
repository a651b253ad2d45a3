"""The verdict rule, pure: raw samples in, a verdict out. No Django here.

A change is called only when it is

1. *significant*: two-sided Mann–Whitney U on the raw per-repetition samples,
   p below ``alpha``;
2. *large*: the relative change of the medians beyond ``threshold_pct``;
3. *beyond the run-to-run noise*: beyond ``noise_k`` standard deviations of
   the medians of earlier runs of the same comparison (the noise floor, on a
   log scale: see Noise).

A change that passes all three is then confirmed before it stands
(services/confirmation.py): by default by A/B pairs of the baseline and the
candidate build run in turn on the same rig (regressions/ab.py, which a slow
spell or a speed step between two nights cannot fool); or, with the re-run
rule, by re-running the candidate, which must pass all three again against the
same baseline and floor, in the same direction.

Significance alone flags tiny real shifts once there are enough samples; size
alone flags noise. And both together still flag *drift*: two runs of the same
build on a busy machine differ by more than the spread within either run
(thermal state, other tenants, frequency scaling), so the U test on 10 vs 10
samples of two runs finds "significant" differences that are no change at all
(48.9% of A/A pairs on a loaded 2-core box). The third test is the one
regression trackers use for that (conbench's lookback z-score, git-perf's
sigma): judge the new run against the spread of whole runs, not of samples.

The spread is the standard deviation of the (log) run medians, not a MAD:
with the 3–5 runs a nightly history starts with, the MAD of 3 values is their
smaller gap and is near 0 far too often (simulated A/A with k=5: the floor
alone lets 22% through at 3 runs with MAD, 5% with the SD, 1.3% at 5 runs and
0.4% at 8; the p and threshold tests cut that further). Below MIN_NOISE_RUNS
medians there is no floor and the verdict says so. Medians, not means, so one
stalled repetition does not move the effect.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from runners import stats
from runners.stats import significance

# The metric every verdict judges, on its raw decode samples (Verdict.metric).
METRIC = "decode_tokens_per_s"
DEFAULT_ALPHA = 0.01
DEFAULT_THRESHOLD_PCT = 3.0
# The noise floor in standard deviations of run medians (a z-score threshold).
DEFAULT_NOISE_K = stats.NOISE_K_ALERT
# How many recent run medians the noise floor is measured on.
DEFAULT_NOISE_RUNS = 10
# Re-runs a change must survive before it stands (services/confirmation.py):
# one outlier run, a noisy neighbour for a minute, is then no alarm.
DEFAULT_CONFIRM_RUNS = 1
# Below this many samples on either side the exact U test cannot reach
# p < 0.01 at all (3 vs 3 bottoms out at p = 0.1), so no verdict is made.
MIN_SAMPLES = 3
# Fewer run medians than this give no noise floor (runners.stats, the one
# definition of run-to-run noise). A first build is benchmarked this many times
# (services/detection.py) so the second one already has a floor.
MIN_NOISE_RUNS = stats.MIN_NOISE_RUNS


class Kind(StrEnum):
    REGRESSION = "regression"
    IMPROVEMENT = "improvement"
    NONE = "none"


@dataclass(frozen=True)
class Rule:
    """What counts as a change: significance level, minimum effect, the noise
    floor's multiplier, and the direction in which the metric is better
    (decode t/s: higher; TTFT: lower)."""

    alpha: float = DEFAULT_ALPHA
    threshold_pct: float = DEFAULT_THRESHOLD_PCT
    noise_k: float = DEFAULT_NOISE_K
    higher_is_better: bool = True

    def __post_init__(self) -> None:
        if not 0 < self.alpha < 1:
            raise ValueError(f"alpha must be between 0 and 1, got {self.alpha}")
        if self.threshold_pct < 0:
            raise ValueError(f"threshold_pct must not be negative, got {self.threshold_pct}")
        if self.noise_k < 0:
            raise ValueError(f"noise_k must not be negative, got {self.noise_k}")


@dataclass(frozen=True)
class Noise(stats.RunNoise):
    """The run-to-run noise of one comparison (runners.stats.RunNoise: the SD of
    its run medians on a log scale, and the floor k × that), as a verdict names it."""

    def describe(self) -> str:
        """Return the floor as a verdict's reason names it."""
        bounds = self.bounds_pct()
        if bounds is None or self.spread_pct is None:
            runs = "run" if self.n_runs == 1 else "runs"
            return f"noise floor unknown: first builds ({self.n_runs} earlier {runs}, need {MIN_NOISE_RUNS})"
        return (
            f"noise floor {bounds[0]:+.2f}%/{bounds[1]:+.2f}% "
            f"({self.k:g} × SD {self.spread_pct:.2f}% of {self.n_runs} runs)"
        )


UNKNOWN_NOISE = Noise(0, None, None)


def noise_from_medians(run_medians: Sequence[float | None], k: float = DEFAULT_NOISE_K) -> Noise:
    """Return the noise of these per-run medians (runners.stats.run_noise: missing,
    non-finite and non-positive ones dropped). Below MIN_NOISE_RUNS medians the
    spread and floor are None."""
    noise = stats.run_noise(run_medians, k=k)
    return Noise(noise.n_runs, noise.spread_pct, noise.floor_pct, noise.k)


def run_median(samples: Sequence[float | None]) -> float | None:
    """Return the median of one run's samples; None if it has none."""
    values = _clean(samples)
    return statistics.median(values) if values else None


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
    noise: Noise = UNKNOWN_NOISE


def _clean(values: Sequence[float | None]) -> list[float]:
    return [float(v) for v in values if v is not None and math.isfinite(float(v))]


def judge(
    new: Sequence[float | None],
    baseline: Sequence[float | None],
    rule: Rule | None = None,
    noise: Noise | None = None,
) -> Outcome:
    """Return the verdict for ``new`` samples against ``baseline`` samples.

    ``noise`` is the run-to-run noise of earlier runs (noise_from_medians);
    without it, or with fewer than MIN_NOISE_RUNS medians behind it, the rule
    falls back to p and threshold alone and the reason says the floor is
    unknown. Missing and non-finite samples are dropped. With fewer than
    MIN_SAMPLES on either side, or a baseline median of 0, return kind NONE
    with no p-value."""
    rule = rule or Rule()
    noise = noise or UNKNOWN_NOISE
    a, b = _clean(new), _clean(baseline)
    if len(a) < MIN_SAMPLES or len(b) < MIN_SAMPLES:
        reason = f"too few samples (need {MIN_SAMPLES})"
        return Outcome(Kind.NONE, None, None, None, None, len(a), len(b), reason, noise)
    new_median, base_median = statistics.median(a), statistics.median(b)
    if base_median == 0:
        return Outcome(Kind.NONE, None, None, new_median, base_median, len(a), len(b), "baseline median is 0", noise)
    effect_pct = 100.0 * (new_median - base_median) / base_median
    # Every sample identical on both sides gives p = 1: nothing to tell apart.
    p_value = significance(a, b, test="mannwhitney").p_value
    if p_value >= rule.alpha:
        kind, reason = Kind.NONE, f"not significant (p={p_value:.3g} ≥ {rule.alpha})"
    elif abs(effect_pct) <= rule.threshold_pct:
        kind, reason = Kind.NONE, f"effect {effect_pct:+.2f}% within ±{rule.threshold_pct}%"
    elif noise.contains(effect_pct):
        kind, reason = Kind.NONE, f"effect {effect_pct:+.2f}% within the {noise.describe()}"
    else:
        worse = effect_pct < 0 if rule.higher_is_better else effect_pct > 0
        kind = Kind.REGRESSION if worse else Kind.IMPROVEMENT
        joint = " and the " if noise.known else "; "
        reason = f"p={p_value:.3g} < {rule.alpha}, effect {effect_pct:+.2f}% beyond ±{rule.threshold_pct}%"
        reason += joint + noise.describe()
    return Outcome(kind, p_value, effect_pct, new_median, base_median, len(a), len(b), reason, noise)


def nearer_to_bad(*, median: float | None, good: float | None, bad: float | None) -> bool | None:
    """Return True if ``median`` is nearer ``bad`` than ``good`` as a ratio
    (the split is their geometric mean), False if nearer ``good``; None if
    any of the three is missing or not positive."""
    if median is None or good is None or bad is None or min(median, good, bad) <= 0:
        return None
    return abs(math.log(median / bad)) < abs(math.log(median / good))


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

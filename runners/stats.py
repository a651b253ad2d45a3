"""Pure statistics over raw per-repetition figures, shared by the runner's
summary table and the service (which recomputes every summary from raw samples).

No Django, no NumPy: the standard library only, so a rig needs nothing extra.
The one exception, ``significance``, imports SciPy when called: only the
service calls it (compare page, regression verdicts, the benchmarks).
"""

from __future__ import annotations

import math
import statistics
import warnings
from collections.abc import Sequence
from dataclasses import asdict, dataclass

# Two-sided 97.5% quantiles of Student's t for 1..30 degrees of freedom; the
# normal quantile beyond. Avoids SciPy on the rig side.
_T_975 = (
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
    2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
)  # fmt: skip
_Z_975 = 1.959964


def t_quantile_975(degrees_of_freedom: int) -> float:
    """Return Student's t 0.975 quantile; raise ValueError below 1 degree of freedom."""
    if degrees_of_freedom < 1:
        raise ValueError("degrees_of_freedom must be at least 1")
    if degrees_of_freedom <= len(_T_975):
        return _T_975[degrees_of_freedom - 1]
    # Cornish-Fisher style correction is below 0.1% past 30 degrees of freedom.
    return _Z_975 + (_Z_975**3 + _Z_975) / (4 * degrees_of_freedom)


def decode_tokens_per_s(*, server: float | None, client: float | None) -> float | None:
    """Return the server's decode t/s when it reported one, else the client's.

    The one rule for "the" decode figure of a repetition: llama-server times
    generation without HTTP and streaming overhead, so its figure wins whenever
    it exists (even 0.0); the client's stopwatch is the fallback."""
    return server if server is not None else client


def build_decode_tokens_per_s(*, server: float | None, client: float | None) -> float | None:
    """Return the decode t/s two builds are compared by: the client's, else the server's.

    The one rule wherever one llama.cpp build is judged against another (the nightly
    chain's verdicts, re-runs, A/B pairs and blocks, bisection and its report). The
    client's figure is (tokens - 1) / (last token - first token) on the runner's own
    clock, which means the same thing whatever the server's version. The server's
    ``predicted_per_second`` does not: up to b10405 it counted the first token, which
    prefill samples for free, over the intervals after it (n tokens over n - 1 gaps,
    x 1.0159 at 64 tokens), and from b10423 (PR #26920) it no longer does, so a
    comparison across that release by the server's figure moved 1.6% with no change
    in decoding (measured in the replay of b10362 ... b10448, benchmarks/README.md).
    The server's figure is the fallback only where the client timed nothing (one
    token, or a stream with no arrival times)."""
    return client if client is not None else server


@dataclass(frozen=True)
class Summary:
    """Summary of one metric over repetitions. Fields needing two or more
    values (stdev, CI) are None with one value."""

    n: int
    mean: float
    median: float
    stdev: float | None
    min: float
    max: float
    range: float
    ci95_low: float | None
    ci95_high: float | None

    def as_dict(self) -> dict[str, float | int | None]:
        return asdict(self)


def _finite(values: Sequence[float]) -> list[float]:
    clean = [float(v) for v in values]
    if any(not math.isfinite(v) for v in clean):
        raise ValueError("values must be finite numbers")
    return clean


def mean(values: Sequence[float]) -> float | None:
    """Return the mean of ``values`` as ``summarize`` gives it (without the spread it
    also computes); None when there are none. Raises ValueError on a non-finite value."""
    clean = _finite(values)
    return statistics.fmean(clean) if clean else None


def summarize(values: Sequence[float]) -> Summary | None:
    """Return the summary of ``values``; None when there are none.

    Raises ValueError on a non-finite value: a NaN must never reach a leaderboard."""
    clean = _finite(values)
    if not clean:
        return None
    n = len(clean)
    mean = statistics.fmean(clean)
    lo, hi = min(clean), max(clean)
    stdev: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    if n >= 2:
        stdev = statistics.stdev(clean)
        half_width = t_quantile_975(n - 1) * stdev / math.sqrt(n)
        ci_low, ci_high = mean - half_width, mean + half_width
    return Summary(
        n=n,
        mean=mean,
        median=statistics.median(clean),
        stdev=stdev,
        min=lo,
        max=hi,
        range=hi - lo,
        ci95_low=ci_low,
        ci95_high=ci_high,
    )


def acceptance_pct(drafted: Sequence[int | None], accepted: Sequence[int | None]) -> float | None:
    """Return total accepted / total drafted draft tokens in percent, over the
    repetitions that report both; None when nothing was drafted.

    Pooled (not a mean of per-run percentages), as llama-server's own
    ``draft acceptance rate`` is."""
    total_drafted = 0
    total_accepted = 0
    for d, a in zip(drafted, accepted, strict=True):
        if d is None or a is None:
            continue
        total_drafted += d
        total_accepted += a
    if total_drafted == 0:
        return None
    return 100.0 * total_accepted / total_drafted


def tokens_per_kwh(tokens: float, energy_j: float | None) -> float | None:
    """Return tokens per kWh for ``tokens`` made with ``energy_j`` joules; None without energy."""
    if energy_j is None or energy_j <= 0:
        return None
    return tokens / (energy_j / 3.6e6)


def relative_delta_pct(value: float | None, baseline: float | None) -> float | None:
    """Return (value - baseline) / baseline in percent; None if either is missing or baseline is 0."""
    if value is None or baseline is None or baseline == 0:
        return None
    return 100.0 * (value - baseline) / baseline


# Two-sided tests ``significance`` knows, by key.
SIGNIFICANCE_TESTS = {"welch": "Welch's t-test", "mannwhitney": "Mann–Whitney U test"}


@dataclass(frozen=True)
class Significance:
    """A two-sided test of one sample against another. ``statistic`` is None
    when the test had no variance to work with (``p_value`` is then 1 or 0)."""

    statistic: float | None
    p_value: float


def significance(sample: Sequence[float], baseline: Sequence[float], *, test: str = "mannwhitney") -> Significance:
    """Return the two-sided ``test`` ('mannwhitney', or 'welch' for Welch's t)
    of ``sample`` against ``baseline``; each needs at least one value (callers
    set their own minimum).

    The one NaN policy: a test with no variance to work with (both sides
    constant) gives NaN; that is p = 1 when the two are the same values and
    p = 0 when they differ, with no statistic. Raise ValueError for an unknown
    ``test``."""
    from scipy import stats as scipy_stats  # the service's; the rig never calls this

    if test not in SIGNIFICANCE_TESTS:
        raise ValueError(f"unknown significance test {test!r}")
    with warnings.catch_warnings():
        # SciPy warns of "catastrophic cancellation" on (nearly) constant samples;
        # the NaN policy below is the answer to that case.
        warnings.simplefilter("ignore", RuntimeWarning)
        if test == "mannwhitney":
            result = scipy_stats.mannwhitneyu(sample, baseline, alternative="two-sided")
        else:
            result = scipy_stats.ttest_ind(sample, baseline, equal_var=False)
    statistic, p_value = float(result.statistic), float(result.pvalue)
    if math.isnan(p_value):
        same = list(sample) == list(baseline) or (len(set(sample)) == 1 and set(sample) == set(baseline))
        return Significance(None, 1.0 if same else 0.0)
    return Significance(statistic, p_value)


# Run-to-run noise, the one definition: how far whole runs of one comparison (same
# rig, build or stack, model, configuration, workload) spread, as the standard
# deviation of their medians on a log scale; a difference within ``k`` of those SDs
# is noise. Log scale, because drift multiplies throughput (a busy machine gives a
# run half the CPU) and a slowdown cannot pass -100% while a speedup has no bound.
# Medians, so one stalled repetition does not move a run. Below MIN_NOISE_RUNS runs
# the noise is unknown: the SD of two values is one difference, so |A - B| > k·SD is
# a ratio of two normals (Cauchy) and passes 16% of A/A pairs even at k = 5.
MIN_NOISE_RUNS = 3
# k differs per use because a mistake costs differently (and only k differs):
# - NOISE_K_DESCRIBE, the compare view and the rig page: a reader looking at two
#   runs is told whether their difference is within what this rig's runs of one
#   configuration spread: about 95% of a stable configuration's runs lie within
#   2 SDs, and a reader who takes a real 3% gain for noise loses little;
# - NOISE_K_ALERT, the nightly regression verdict (leaderboard.regressions.verdict):
#   it judges unattended, every night, over many comparisons and raises alerts, so
#   a false alarm is what must be rare: at k = 5 the floor alone lets 5% of
#   simulated A/A pairs through at 3 runs and 1.3% at 5, before its p and size
#   tests cut that further (its docstring; benchmarks/regression_fpr.py measures it).
NOISE_K_DESCRIBE = 2.0
NOISE_K_ALERT = 5.0


@dataclass(frozen=True)
class RunNoise:
    """The run-to-run noise of one comparison: ``n_runs`` run medians, their SD on
    a log scale in percent (``spread_pct``, about the coefficient of variation while
    it is a few percent) and the floor a change must pass (``floor_pct`` = k ×
    spread, also 100 × a log ratio). Both None below MIN_NOISE_RUNS medians."""

    n_runs: int
    spread_pct: float | None
    floor_pct: float | None
    k: float = NOISE_K_ALERT

    @property
    def known(self) -> bool:
        return self.floor_pct is not None

    def bounds_pct(self) -> tuple[float, float] | None:
        """Return the smallest slowdown and speedup (in %, -/+) beyond the floor;
        None when the floor is unknown."""
        if self.floor_pct is None:
            return None
        factor = math.exp(self.floor_pct / 100.0)
        return 100.0 * (1 / factor - 1), 100.0 * (factor - 1)

    def contains(self, effect_pct: float) -> bool:
        """Return True if a change of ``effect_pct`` is within the floor (never
        when the floor is unknown, or for a change to 0 or below)."""
        ratio = 1 + effect_pct / 100.0
        if self.floor_pct is None or ratio <= 0:
            return False
        return abs(100.0 * math.log(ratio)) <= self.floor_pct


def run_noise(run_medians: Sequence[float | None], *, k: float) -> RunNoise:
    """Return the noise of these run medians (missing, non-finite and non-positive
    ones dropped: a run of 0 t/s measured nothing)."""
    logs = [math.log(float(m)) for m in run_medians if m is not None and math.isfinite(float(m)) and float(m) > 0]
    if len(logs) < MIN_NOISE_RUNS:
        return RunNoise(len(logs), None, None, k)
    spread_pct = 100.0 * statistics.stdev(logs)
    return RunNoise(len(logs), spread_pct, k * spread_pct, k)


def run_noise_from_log_sums(*, n: int, sum_logs: float, sum_log_squares: float, k: float) -> RunNoise:
    """Return ``run_noise`` of n positive medians given Σ ln(m) and Σ ln(m)² (what
    one SQL aggregate over many groups gives)."""
    if n < MIN_NOISE_RUNS:
        return RunNoise(n, None, None, k)
    mean = sum_logs / n
    spread_pct = 100.0 * math.sqrt(max(sum_log_squares - n * mean * mean, 0.0) / (n - 1))
    return RunNoise(n, spread_pct, k * spread_pct, k)


def rate_bounds_95(called: int, trials: int) -> tuple[float, float]:
    """Return the one-sided 95% Clopper–Pearson bounds (lower, upper) of a rate
    seen as ``called`` of ``trials`` (0 of n gives an upper bound of about 3/n,
    the rule of three); (0.0, 1.0) without trials."""
    from scipy.stats import beta  # the service's and the benchmarks'; the rig never calls this

    if trials <= 0:
        return 0.0, 1.0
    lower = 0.0 if called <= 0 else float(beta.ppf(0.05, called, trials - called + 1))
    upper = 1.0 if called >= trials else float(beta.ppf(0.95, called + 1, trials - called))
    return lower, upper

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


def summarize(values: Sequence[float]) -> Summary | None:
    """Return the summary of ``values``; None when there are none.

    Raises ValueError on a non-finite value: a NaN must never reach a leaderboard."""
    clean = [float(v) for v in values]
    if not clean:
        return None
    if any(not math.isfinite(v) for v in clean):
        raise ValueError("values must be finite numbers")
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

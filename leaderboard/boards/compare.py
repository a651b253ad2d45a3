"""Comparing runs against a baseline: ratios, a significance test on the raw
repetitions (Welch's t or Mann–Whitney U) and what makes two runs not
comparable. Pure: takes runs already loaded with their samples."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from leaderboard.boards.rows import LeaderboardRow, run_row
from leaderboard.boards.selectors.noise import Spread, group_key
from leaderboard.results.models import Run
from runners import stats

TESTS = stats.SIGNIFICANCE_TESTS
DEFAULT_TEST = "welch"


@dataclass(frozen=True)
class TestResult:
    """A two-sided test of one run's decode t/s against the baseline's.
    ``p_value`` is None when it could not be run; ``note`` says why."""

    name: str
    statistic: float | None
    p_value: float | None
    note: str = ""


@dataclass(frozen=True)
class Compared:
    run: Run
    row: LeaderboardRow
    samples: list[float]
    is_baseline: bool
    ratio: float | None
    delta_pct: float | None
    test: TestResult | None
    means_only: bool
    # The baseline configuration's run-to-run spread on its rig, when measured.
    spread: Spread | None = None
    verdict: str = ""


def significance(test: str, sample: Sequence[float], baseline: Sequence[float]) -> TestResult:
    """Return ``test`` ('welch' or 'mannwhitney') of ``sample`` against ``baseline``.

    Needs two or more repetitions on each side; identical constant samples give p = 1."""
    key = test if test in TESTS else DEFAULT_TEST
    name = TESTS[key]
    if len(sample) < 2 or len(baseline) < 2:
        return TestResult(name, None, None, "needs two or more raw repetitions on each side")
    result = stats.significance(sample, baseline, test=key)
    if result.statistic is None:
        return TestResult(name, None, result.p_value, "no variance in either sample")
    return TestResult(name, result.statistic, result.p_value)


def key_differences(runs: Sequence[Run]) -> list[str]:
    """Return what differs among ``runs``' comparison keys in words (GPUs, model
    file, workload); empty when they all share one key."""
    if len({r.comparison_key for r in runs}) <= 1:
        return []
    differences = []
    gpus = {r.rig.gpu_summary().lower() for r in runs}
    if len(gpus) > 1:
        differences.append("different GPUs")
    if len({r.model_file.identity for r in runs}) > 1:
        differences.append("different model files")
    workloads = {(r.workload.name, r.workload.version, r.workload.prompt_sha256, r.workload.max_tokens) for r in runs}
    if len(workloads) > 1:
        differences.append("different workloads")
    return differences or ["different comparison keys"]


SIGNIFICANCE = 0.05


def verdict(*, delta_pct: float | None, test: TestResult | None, spread: Spread | None) -> str:
    """Return what a difference against the baseline means, in words.

    A difference within the noise margin of the baseline's configuration on its
    rig (``Spread.covers``: runners.stats.run_noise, k = 2, from 3 runs) is "within
    run-to-run spread" whatever a test on the repetitions says: repetitions
    within one run vary less than runs do."""
    if delta_pct is None:
        return ""
    if round(delta_pct, 1) == 0:
        # 249.303 against 249.3: no difference at the precision shown (not "-0.0% slower").
        return "the same (within 0.05%)"
    direction = "faster" if delta_pct > 0 else "slower"
    if spread is not None and spread.covers(delta_pct):
        return "within run-to-run spread"
    if test is None or test.p_value is None:
        return f"{direction} (published means, untested)"
    if test.p_value < SIGNIFICANCE:
        return direction
    return "no significant difference"


def compare_runs(
    runs: Sequence[Run],
    *,
    baseline_id: int | None,
    test: str,
    usd_per_kwh: float,
    spreads: Mapping[tuple[int, int, int, int, int], Spread] | None = None,
) -> tuple[list[Compared], Run | None]:
    """Return each run against the baseline (``baseline_id`` when it is among
    ``runs``, else the first), and the baseline. A run without raw samples on
    either side is compared on the published means and flagged ``means_only``.
    ``spreads`` (selectors.noise.spreads_for) gives each run's verdict its
    run-to-run spread: the baseline's configuration's, else the run's own."""
    if not runs:
        return [], None
    spreads = spreads or {}
    baseline = next((r for r in runs if r.pk == baseline_id), runs[0])
    base_samples = baseline.decode_samples()
    base_mean = baseline.decode_tokens_per_s_mean
    out = []
    for run in runs:
        samples = run.decode_samples()
        mean = run.decode_tokens_per_s_mean
        ratio = mean / base_mean if mean is not None and base_mean else None
        is_baseline = run.pk == baseline.pk
        means_only = not samples or not base_samples
        result = None
        if not is_baseline:
            if means_only:
                name = TESTS.get(test, TESTS[DEFAULT_TEST])
                result = TestResult(name, None, None, "no raw samples: published means only")
            else:
                result = significance(test, samples, base_samples)
        spread = spreads.get(group_key(baseline)) or spreads.get(group_key(run))
        delta_pct = (ratio - 1) * 100 if ratio is not None else None
        out.append(
            Compared(
                run=run,
                row=run_row(run, usd_per_kwh=usd_per_kwh),
                samples=samples,
                is_baseline=is_baseline,
                ratio=ratio,
                delta_pct=delta_pct,
                test=result,
                means_only=means_only,
                spread=spread,
                verdict="" if is_baseline else verdict(delta_pct=delta_pct, test=result, spread=spread),
            )
        )
    return out, baseline

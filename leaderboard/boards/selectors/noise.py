"""Run-to-run noise: where a rig has run one configuration several times, how
far its run medians spread. A difference between two runs within that noise
margin (runners.stats.run_noise with k = NOISE_K_DESCRIBE: the one definition of
run-to-run noise, and why its k differs from the regression verdict's) is not
evidence that one stack is faster."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.db import connection
from django.db.models import Avg, Count, F, Max, Min, Q, QuerySet, Sum
from django.db.models.functions import Ln

from leaderboard.results.models import CONFIGURATION_GROUP, Run, RunSpread, RunStatus, SummarySource
from runners import stats

# "Within run-to-run spread": the one rule of the compare view and the rig page.
NOISE_MARGIN_SDS = stats.NOISE_K_DESCRIBE
NOISE_MARGIN_RULE = (
    f"{NOISE_MARGIN_SDS:g} × the standard deviation of the run medians on a log scale "
    f"(from {stats.MIN_NOISE_RUNS} runs)"
)


@dataclass(frozen=True)
class Spread:
    """The spread of the decode t/s medians of one configuration's runs on one rig."""

    rig_id: int
    stack_id: int
    model_file_id: int
    configuration_id: int
    workload_id: int
    label: str
    n_runs: int
    mean_of_medians: float
    stdev_of_medians: float | None
    min_median: float
    max_median: float
    noise: stats.RunNoise  # the noise rule's figures (log scale); the fields above describe

    @property
    def stdev_pct(self) -> float | None:
        if self.stdev_of_medians is None or not self.mean_of_medians:
            return None
        return 100.0 * self.stdev_of_medians / self.mean_of_medians

    @property
    def margin_pct(self) -> float | None:
        """Return the noise margin (``noise.floor_pct``: NOISE_MARGIN_SDS × the SD of
        the log run medians, in percent); None below MIN_NOISE_RUNS runs."""
        return self.noise.floor_pct

    def covers(self, delta_pct: float) -> bool:
        """Return whether a difference of ``delta_pct`` % is within the noise margin."""
        return self.noise.contains(delta_pct)

    @property
    def key(self) -> tuple[int, int, int, int, int]:
        return (self.rig_id, self.stack_id, self.model_file_id, self.configuration_id, self.workload_id)


def sample_sd(*, n: int, mean: float, sum_of_squares: float) -> float:
    """Return the sample standard deviation (n − 1) from a group's count, mean and Σx²."""
    return math.sqrt(max(sum_of_squares - n * mean * mean, 0.0) / (n - 1))


def _labels(rows: Sequence[dict[str, int]]) -> dict[int, str]:
    """Return each group's label ("engine build · model quant · spec · workload") by the
    id of one of its runs (``any_id``): one read of those few runs, issued even when
    there are none, so the page's query count does not depend on its data."""
    labels = {}
    for r in Run.objects.filter(pk__in=[r["any_id"] for r in rows] or [0]).values(
        "pk",
        "stack__engine",
        "stack__build",
        "model_file__name",
        "model_file__quantization",
        "configuration__speculative_type",
        "workload__name",
    ):
        spec = r["configuration__speculative_type"]
        parts = (
            f"{r['stack__engine']} {r['stack__build']}".strip(),
            f"{r['model_file__name']} {r['model_file__quantization']}".strip(),
            spec if spec != "none" else "",
            r["workload__name"],
        )
        labels[r["pk"]] = " · ".join(part for part in parts if part)
    return labels


_SPREAD_ROW = ("n", "any_id", "mean", "sumsq", "n_log", "sum_logs", "sum_log_squares", "lo", "hi")


def spread_rows_from_runs(runs: QuerySet[Run], *, limit: int) -> list[dict[str, Any]]:
    """Return the spread sums of each group of ``runs`` with two or more of them, most runs
    first, ``limit`` of them: the plain reference of the rows ``RunSpread`` keeps."""
    # Aggregated on the runs table alone (index-only over run_spread_idx, in group
    # order: no join on the rig's every run), then labelled for the groups kept.
    return list(
        runs.values(*CONFIGURATION_GROUP)
        .annotate(
            n=Count("pk"),
            any_id=Max("pk"),  # the run whose catalog rows name the group
            mean=Avg("decode_tokens_per_s_median"),
            # Σx², not StdDev: SQLite's STDDEV_SAMP (Python's statistics.stdev)
            # raises on the one-run groups HAVING drops only afterwards.
            sumsq=Sum(F("decode_tokens_per_s_median") * F("decode_tokens_per_s_median")),
            n_log=Count("pk", filter=Q(decode_tokens_per_s_median__gt=0)),
            sum_logs=Sum(Ln("decode_tokens_per_s_median"), filter=Q(decode_tokens_per_s_median__gt=0)),
            sum_log_squares=Sum(
                Ln("decode_tokens_per_s_median") * Ln("decode_tokens_per_s_median"),
                filter=Q(decode_tokens_per_s_median__gt=0),
            ),
            lo=Min("decode_tokens_per_s_median"),
            hi=Max("decode_tokens_per_s_median"),
        )
        .filter(n__gte=2)
        .order_by("-n", "-mean", *CONFIGURATION_GROUP)[:limit]
    )


def spread_rows_kept(*, rig_id: int, limit: int) -> list[dict[str, Any]]:
    """Return the same rows as ``spread_rows_from_runs`` over the rig's measured runs, read
    from the sums the database keeps (``RunSpread``): ``limit`` rows of an index, whatever
    the rig's number of runs. PostgreSQL only: elsewhere no trigger keeps them."""
    return list(
        RunSpread.objects.filter(rig_id=rig_id, n__gte=2)
        .order_by("-n", "-mean", *CONFIGURATION_GROUP)
        .annotate(any_id=F("any_run_id"))
        .values(*CONFIGURATION_GROUP, *_SPREAD_ROW)[:limit]
    )


def _of_groups(keys: set[tuple[int, int, int, int, int]]) -> Q:
    """Return the filter matching exactly these groups (one AND of the five ids per key)."""
    found = Q(pk__in=[])
    for key in sorted(keys):
        found |= Q(**dict(zip(CONFIGURATION_GROUP, key, strict=True)))
    return found


def spread_rows_kept_for(keys: set[tuple[int, int, int, int, int]]) -> list[dict[str, Any]]:
    """Return the kept rows (``RunSpread``) of these groups with two or more runs, by key:
    an index read per group, whatever the rigs' number of runs. PostgreSQL only."""
    return list(
        RunSpread.objects.filter(_of_groups(keys), n__gte=2)
        .order_by("-n", "-mean", *CONFIGURATION_GROUP)
        .annotate(any_id=F("any_run_id"))
        .values(*CONFIGURATION_GROUP, *_SPREAD_ROW)
    )


def _spreads(rows: list[dict[str, Any]]) -> list[Spread]:
    labels = _labels(rows)
    return [
        Spread(
            rig_id=r["rig_id"],
            stack_id=r["stack_id"],
            model_file_id=r["model_file_id"],
            configuration_id=r["configuration_id"],
            workload_id=r["workload_id"],
            label=labels[r["any_id"]],
            n_runs=r["n"],
            mean_of_medians=r["mean"],
            stdev_of_medians=sample_sd(n=r["n"], mean=r["mean"], sum_of_squares=r["sumsq"]),
            min_median=r["lo"],
            max_median=r["hi"],
            noise=stats.run_noise_from_log_sums(
                n=r["n_log"],
                sum_logs=r["sum_logs"] or 0.0,
                sum_log_squares=r["sum_log_squares"] or 0.0,
                k=NOISE_MARGIN_SDS,
            ),
        )
        for r in rows
    ]


def _measured_runs() -> QuerySet[Run]:
    # Only runs whose medians come from raw repetitions: a published headline has no noise to measure.
    return Run.objects.filter(
        status=RunStatus.FINISHED,
        summary_source=SummarySource.SAMPLES,
        decode_tokens_per_s_median__isnull=False,
    ).order_by()


def rig_spreads(*, rig_id: int, limit: int = 20) -> list[Spread]:
    """Return the run-to-run spread of each configuration this rig ran two or
    more times (most runs first), two queries (the sums, the labels)."""
    if connection.vendor == "postgresql":
        return _spreads(spread_rows_kept(rig_id=rig_id, limit=limit))
    return _spreads(spread_rows_from_runs(_measured_runs().filter(rig_id=rig_id), limit=limit))


def spreads_for(runs: Sequence[Run]) -> dict[tuple[int, int, int, int, int], Spread]:
    """Return the spreads of the groups ``runs`` belong to, by group key: the kept sums on
    PostgreSQL, else the aggregate over those groups' runs (its plain reference). Two queries
    (the sums, the labels).

    Before the kept sums, the aggregate over the compared rigs' runs of the compared
    configurations took 1.1 s of SQL for four runs at 10M runs (50,000 runs a rig)."""
    if not runs:
        return {}
    keys = {group_key(r) for r in runs}
    if connection.vendor == "postgresql":
        rows = spread_rows_kept_for(keys)
    else:
        rows = spread_rows_from_runs(_measured_runs().filter(_of_groups(keys)), limit=len(keys))
    return {s.key: s for s in _spreads(rows)}


def group_key(run: Run) -> tuple[int, int, int, int, int]:
    return (run.rig_id, run.stack_id, run.model_file_id, run.configuration_id, run.workload_id)

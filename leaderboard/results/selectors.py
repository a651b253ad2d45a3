"""Reads: querysets for the API and the site, joined so that their cost does
not grow with the number of rows (one query per page plus one per prefetch)."""

from __future__ import annotations

from django.db.models import Count, Prefetch, QuerySet

from leaderboard.results.models import (
    PublishedComparison,
    PublishedComparisonRow,
    Rig,
    RigGpu,
    Run,
    Source,
)

_RIG_GPUS = Prefetch("rig__gpus", queryset=RigGpu.objects.order_by("position", "id"))


def run_list() -> QuerySet[Run]:
    """Return all runs with what a list row shows (rig and its GPUs, stack,
    model file, configuration, workload, source) fetched up front."""
    return Run.objects.select_related(
        "rig", "stack", "model_file", "configuration", "workload", "source"
    ).prefetch_related(_RIG_GPUS)


def run_detail_queryset() -> QuerySet[Run]:
    """Return runs with everything the detail shows, samples and sweep points included."""
    return run_list().prefetch_related("samples", "sweep_points", "concurrency_levels__requests")


def run_get(*, uuid: str) -> Run | None:
    """Return the run with ``uuid`` and everything its detail shows, or None."""
    return run_detail_queryset().filter(uuid=uuid).first()


def rig_list() -> QuerySet[Rig]:
    """Return rigs with their GPUs and the number of runs each has."""
    return (
        Rig.objects.annotate(n_runs=Count("runs"))
        .prefetch_related(Prefetch("gpus", queryset=RigGpu.objects.order_by("position", "id")))
        .order_by("name")
    )


def source_list() -> QuerySet[Source]:
    """Return the articles reported results come from, with their number of runs."""
    return Source.objects.annotate(n_runs=Count("runs")).order_by("key")


def source_detail_queryset() -> QuerySet[Source]:
    """Return sources with their comparison tables (rows in order), experiments and fits."""
    rows = PublishedComparisonRow.objects.select_related("run").order_by("position")
    comparisons = PublishedComparison.objects.order_by("key").prefetch_related(Prefetch("rows", queryset=rows))
    return source_list().prefetch_related(Prefetch("comparisons", queryset=comparisons), "experiments", "fits")


# Community rigs awaiting review (or rejected) stay out of public lists. The
# review lives in leaderboard.intake (RigOwnership, reverse name "ownership"),
# which results may not import: the lookup names the relation instead.
HIDDEN_REVIEW_STATUSES = ("pending", "rejected")


def run_list_public() -> QuerySet[Run]:
    """Return run_list() without the runs of rigs awaiting review or rejected."""
    return run_list().exclude(rig__ownership__review_status__in=HIDDEN_REVIEW_STATUSES)


def rig_list_public() -> QuerySet[Rig]:
    """Return rig_list() without the rigs awaiting review or rejected."""
    return rig_list().exclude(ownership__review_status__in=HIDDEN_REVIEW_STATUSES)

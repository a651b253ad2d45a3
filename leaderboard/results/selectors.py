"""Reads: querysets for the API and the site, joined so that their cost does
not grow with the number of rows (one query per page plus one per prefetch)."""

from __future__ import annotations

from typing import Any

from django.db.models import Count, OuterRef, Prefetch, Q, QuerySet, Subquery

from leaderboard.results.models import (
    Configuration,
    ModelFile,
    PublishedComparison,
    PublishedComparisonRow,
    ReviewStatus,
    Rig,
    RigGpu,
    RigQuerySet,
    Run,
    RunQuerySet,
    Source,
    Workload,
)

_RIG_GPUS = Prefetch("rig__gpus", queryset=RigGpu.objects.order_by("position", "id"))


def run_list() -> RunQuerySet:
    """Return all runs with what a list row shows (rig and its GPUs, stack,
    model file, configuration, workload, source) fetched up front."""
    return Run.objects.select_related(
        "rig", "stack", "model_file", "configuration", "workload", "source"
    ).prefetch_related(_RIG_GPUS)


def run_detail_queryset() -> RunQuerySet:
    """Return runs with everything the detail shows, samples and sweep points included."""
    return run_list().prefetch_related("samples", "sweep_points", "concurrency_levels__requests")


def run_get(*, uuid: str, viewer: Any = None, token_rig_id: int | None = None) -> Run | None:
    """Return the run with ``uuid`` and everything its detail shows, or None when
    there is none or its rig is hidden from ``viewer`` (and from the holder of rig
    ``token_rig_id``'s token): a pending rig's run answers 404 like a missing one."""
    runs = run_detail_queryset().visible_to(viewer, token_rig_id=token_rig_id)
    return runs.filter(uuid=uuid).first()


def rig_list() -> RigQuerySet:
    """Return rigs with their GPUs and the number of runs each has."""
    return (
        Rig.objects.annotate(n_runs=Count("runs"))
        .prefetch_related(Prefetch("gpus", queryset=RigGpu.objects.order_by("position", "id")))
        .order_by("name")
    )


def source_list() -> QuerySet[Source]:
    """Return the articles reported results come from, with their number of public runs."""
    public = Q(runs__rig__review_status=ReviewStatus.APPROVED)
    return Source.objects.annotate(n_runs=Count("runs", filter=public)).order_by("key")


def source_detail_queryset() -> QuerySet[Source]:
    """Return sources with their comparison tables (rows in order), experiments and fits."""
    rows = PublishedComparisonRow.objects.select_related("run").order_by("position")
    comparisons = PublishedComparison.objects.order_by("key").prefetch_related(Prefetch("rows", queryset=rows))
    return source_list().prefetch_related(Prefetch("comparisons", queryset=comparisons), "experiments", "fits")


# What a list row (RunListOutputSerializer) does not show, left unread by the list:
# a run's log tail (up to 20,000 characters from a runner), its fingerprint and extra
# documents, its notes, and the rig's and configuration's columns shown only by the
# detail. A 1,000-run cursor page read up to 20 MB of log tails to show none.
_LIST_UNREAD = (
    "notes",
    "fingerprint",
    "server_log_tail",
    "extra",
    "updated_at",
    "stack__notes",
    *(f"rig__{field.name}" for field in Rig._meta.concrete_fields if field.name not in {"id", "name"}),
    *(
        f"configuration__{field.name}"
        for field in Configuration._meta.concrete_fields
        if field.name not in {"id", "speculative_type"}
    ),
)


def run_list_public() -> RunQuerySet:
    """Return run_list() without the runs of rigs awaiting review or rejected,
    reading only the columns a list row shows (``_LIST_UNREAD`` stays unread)."""
    return run_list().public().defer(*_LIST_UNREAD)


def rig_list_public() -> RigQuerySet:
    """Return rig_list() without the rigs awaiting review or rejected."""
    return rig_list().public()


def _with_a_run(rows: QuerySet[Any], runs: QuerySet[Run], field: str) -> QuerySet[Any]:
    """Return the ``rows`` some run of ``runs`` points at by ``field``.

    Asked as "the id of one such run" (a subquery with LIMIT 1), not as ``pk IN (runs)``:
    PostgreSQL planned the IN as a semi-join whose every probe first gathered all of a
    row's runs in a bitmap (16,667 a model file, 200,000 a workload at a million runs:
    0.4-0.6 s on every leaderboard page's filter menus), where one index entry answers."""
    one = runs.filter(**{field: OuterRef("pk")}).order_by().values("pk")[:1]
    return rows.annotate(_a_run=Subquery(one)).filter(_a_run__isnull=False)


def model_files_visible_to(viewer: Any) -> QuerySet[ModelFile]:
    """Return the model files with a run ``viewer`` may see (None: the public):
    a file only a hidden rig ran is as hidden as the rig."""
    return _with_a_run(ModelFile.objects.all(), Run.objects.visible_to(viewer), "model_file")


def workloads_public() -> QuerySet[Workload]:
    """Return the workloads with a public run."""
    return _with_a_run(Workload.objects.all(), Run.objects.public(), "workload")

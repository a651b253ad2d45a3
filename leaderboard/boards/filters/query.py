"""The runs a valid filter form's ``cleaned_data`` narrows the leaderboard to."""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from django.db.models import CharField, Exists, F, OuterRef, Q, QuerySet, Subquery, Value
from django.db.models.functions import Concat

from leaderboard.results.models import CONFIGURATION_GROUP, ModelFile, Provenance, Rig, RigGpu, Run, Workload

# The form fields that narrow the runs by one lookup each, when given.
_FIELD_LOOKUPS = {
    "rig": "rig__name",
    "engine": "stack__engine",
    "spec": "configuration__speculative_type",
    "provenance": "provenance",
}


def chosen_model_files(data: dict[str, Any]) -> list[int] | None:
    """Return the ids of the model files a valid form's ``cleaned_data`` narrows to
    (model name, quant, model file), in one query; None when it names none."""
    if not (data.get("model") or data.get("quant") or data.get("model_file")):
        return None
    files = ModelFile.objects.all()
    if data.get("model"):
        files = files.filter(name__icontains=data["model"])
    if data.get("quant"):
        files = files.filter(quantization=data["quant"])
    if data.get("model_file"):
        files = files.filter(pk=data["model_file"])
    return list(files.order_by("pk").values_list("pk", flat=True))


def runs_filter(
    queryset: QuerySet[Run], data: dict[str, Any], *, model_files: list[int] | None = None
) -> QuerySet[Run]:
    """Return ``queryset`` narrowed by a valid form's ``cleaned_data``; ``model_files``:
    the ids ``chosen_model_files(data)`` returned, when the caller has them already."""
    if data.get("gpu"):
        queryset = queryset.filter(rig__in=rigs_only_with(data["gpu"]))
    for name, lookup in _FIELD_LOOKUPS.items():
        if data.get(name):
            queryset = queryset.filter(**{lookup: data[name]})
    if data.get("rig"):
        # The rig's id as a constant too: PostgreSQL then plans with that rig's own run
        # count (a busy rig's runs are walked in rank order and the walk stops at the
        # page; a small rig's are read by rig and sorted), where a join on the name
        # plans for an average rig and ranks every run of a busy one.
        rig_id = Rig.objects.filter(name=data["rig"]).values_list("pk", flat=True).first()
        queryset = queryset.filter(rig_id=rig_id) if rig_id is not None else queryset.none()
    files = chosen_model_files(data) if model_files is None else model_files
    if files is not None:
        # The model files' ids as constants, as for the rig: one file's runs are then
        # walked in its rank index (run_model_rank_idx) and the walk stops at the page,
        # where a join on the names walked the whole ranking for them (0.34 s at 1M runs).
        queryset = queryset.filter(model_file_id__in=files)
    if data.get("workload"):
        # Every workload of the chosen one's name and version: the menu lists each once.
        chosen = Workload.objects.filter(pk=data["workload"])
        same = Workload.objects.filter(
            name=Subquery(chosen.values("name")[:1]), version=Subquery(chosen.values("version")[:1])
        )
        queryset = queryset.filter(workload__in=same.values("pk"))
    queryset = _dates_filter(queryset, data.get("since"), data.get("until"))
    if data.get("q"):
        # One box for rig, GPU and model names. The small tables are searched first and
        # the runs filtered by their ids as constants, as for the rig: no join on the ranked
        # scan, and the count reads only the matching rigs' entries of an index led by the
        # rig, where subqueries had it test every ranked run (33 → 6 ms at 100k runs).
        term = data["q"].strip()
        rigs = Rig.objects.filter(Q(name__icontains=term) | Q(gpus__model__icontains=term))
        rig_ids = sorted(set(rigs.values_list("pk", flat=True)))
        file_ids = list(ModelFile.objects.filter(name__icontains=term).order_by("pk").values_list("pk", flat=True))
        queryset = queryset.filter(Q(rig_id__in=rig_ids) | Q(model_file_id__in=file_ids))
    if not data.get("failed"):
        # A fast but broken run is not a winner: runs with a failed output check are left
        # out unless asked for (the count kept with the summary, in the rank indexes).
        queryset = queryset.filter(failed_checks=0)
    if data.get("best"):
        queryset = best_of_each_configuration(queryset)
    return queryset


def rigs_only_with(gpu: str) -> QuerySet[RigGpu, Any]:
    """Return the ids of the rigs whose every GPU is the ``gpu`` model, as a subquery.

    A run is ranked under a GPU model only when it must have run on that model: on
    a rig that mixes models no run says which card ran it (seed 000's runs each used
    one of a 3090 Ti and a 3090; the article does not say which), so its runs are on
    the rig's page and the leaderboard, marked "card not stated", not on either GPU's.
    A subquery, not a join: a rig with two GPU groups must not list its runs twice."""
    mixed = RigGpu.objects.exclude(model=gpu).values("rig")
    return RigGpu.objects.filter(model=gpu).exclude(rig__in=mixed).values("rig")


def best_of_each_configuration(queryset: QuerySet[Run]) -> QuerySet[Run]:
    """Return the runs of ``queryset`` that are the fastest (mean decode t/s, ties to
    the later run) of their rig × stack × model file × configuration × workload among
    the rows of ``queryset`` itself: the same filters judge the rivals.

    An anti-join, not a window function: "no faster run of my group" is an index
    probe per run (``run_ranked_group_idx``), so a ranked page of 50 walks the rank
    index and stops, where a window numbers every filtered run first (0.16 s at
    100k runs, nearly all of them alone in their group: benchmarks/site_latency.py).
    The same query on SQLite and PostgreSQL."""
    faster = Q(decode_tokens_per_s_mean__gt=OuterRef("decode_tokens_per_s_mean")) | Q(
        decode_tokens_per_s_mean=OuterRef("decode_tokens_per_s_mean"), pk__gt=OuterRef("pk")
    )
    rivals = queryset.filter(faster, **{field: OuterRef(field) for field in CONFIGURATION_GROUP})
    return queryset.exclude(Exists(rivals.order_by()))


def configuration_groups(queryset: QuerySet[Run]) -> QuerySet[Run, dict[str, Any]]:
    """Return the configuration groups that have a run in ``queryset``, one row each:
    as many rows as ``best_of_each_configuration(queryset)`` has (each group keeps its
    one fastest run), so its count is theirs without a probe per run. PostgreSQL reads
    it in group order from ``run_ranked_group_idx`` alone and stops at a LIMIT, where
    the anti-join's count probed that index (and read the table) for every run counted:
    1,000 probes took 140 ms at 10M runs (benchmarks/README.md, issue 40)."""
    return queryset.order_by().values(*CONFIGURATION_GROUP).distinct()


def day_start(day: date) -> datetime:
    return datetime.combine(day, time.min, tzinfo=UTC)


def _dates_filter(queryset: QuerySet[Run], since: date | None, until: date | None) -> QuerySet[Run]:
    """Return the runs whose shown date lies in since..until (whole days, either may be None).

    A measured run shows the UTC day it was stored: a half-open range on the raw
    column, so its index serves it. A reported run shows its source's date, which
    may be a year or a month (``2026-03``): it is kept when that period overlaps the
    range, compared as text (``2026-03~`` sorts after every day of March)."""
    if until is not None and until >= date.max:  # up to 9999-12-31 is everything
        until = None
    if since is None and until is None:
        return queryset
    measured = ~Q(provenance=Provenance.REPORTED)
    reported = Q(provenance=Provenance.REPORTED, source__published_date__gt="")
    if since is not None:
        measured &= Q(created_at__gte=day_start(since))
        reported &= Q(shown_period_end__gte=since.isoformat())
    if until is not None:
        measured &= Q(created_at__lt=day_start(until + timedelta(days=1)))
        reported &= Q(source__published_date__lte=until.isoformat())
    return queryset.annotate(
        shown_period_end=Concat(F("source__published_date"), Value("~"), output_field=CharField())
    ).filter(measured | reported)

"""Reads for the leaderboard and rig pages. Every function here issues a fixed
number of queries whatever the number of rows it returns."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.core.paginator import Page, Paginator
from django.db.models import Prefetch, QuerySet
from django.http import QueryDict

from leaderboard.boards.filters import (
    LeaderboardFilterForm,
    filter_options,
    parse_per_page,
    parse_sort,
    runs_filter,
    runs_sort,
)
from leaderboard.boards.rows import LeaderboardRow, run_row
from leaderboard.results.models import Rig, RigGpu, Run, RunStatus

RUN_RELATED = ("rig", "stack", "model_file", "configuration", "workload", "source")
# Large columns no table shows; the run page loads them.
RUN_DEFERRED = (
    "fingerprint",
    "server_log_tail",
    "extra",
    "notes",
    "failure_reason",
    "configuration__command_line",
    "configuration__tensor_overrides",
    "configuration__extra_args",
    "stack__notes",
    "workload__description",
    "rig__notes",
)


def ranked_runs() -> QuerySet[Run]:
    """Return finished runs with a decode figure, with what a row shows fetched in
    two queries (the runs, then their rigs' GPUs)."""
    return (
        Run.objects.filter(status=RunStatus.FINISHED, decode_tokens_per_s_mean__isnull=False)
        .select_related(*RUN_RELATED)
        .defer(*RUN_DEFERRED)
        .prefetch_related(Prefetch("rig__gpus", queryset=RigGpu.objects.order_by("position", "id")))
    )


def usd_per_kwh_from(raw: Any) -> float:
    """Return the electricity price to use: ``raw`` when it is a number in 0..10, else the setting."""
    try:
        value = float(raw)
    except (TypeError, ValueError):
        return settings.RIGBOARD_ELECTRICITY_USD_PER_KWH
    if not 0 <= value <= 10:
        return settings.RIGBOARD_ELECTRICITY_USD_PER_KWH
    return value


@dataclass(frozen=True)
class LeaderboardView:
    form: LeaderboardFilterForm
    rows: list[LeaderboardRow]
    page: Page[Run] | None
    sort: str
    per_page: int
    usd_per_kwh: float
    total: int


def leaderboard_view(params: QueryDict) -> LeaderboardView:
    """Return the leaderboard for a query string: filtered, sorted, one page.

    Invalid filters leave the form with errors and return no rows; a page
    number past the end returns the last page."""
    form = LeaderboardFilterForm(params, options=filter_options())
    sort = parse_sort(params.get("sort"))
    per_page = parse_per_page(params.get("per_page"))
    usd_per_kwh = usd_per_kwh_from(params.get("usd_per_kwh"))
    if not form.is_valid():
        return LeaderboardView(form, [], None, sort, per_page, usd_per_kwh, 0)
    queryset = runs_sort(runs_filter(ranked_runs(), form.cleaned_data), sort)
    paginator = Paginator(queryset, per_page)
    page = paginator.get_page(params.get("page"))
    rows = [run_row(run, usd_per_kwh=usd_per_kwh) for run in page.object_list]
    return LeaderboardView(form, rows, page, sort, per_page, usd_per_kwh, paginator.count)


@dataclass(frozen=True)
class RigBoard:
    rig: Rig
    best: list[LeaderboardRow]
    history: list[LeaderboardRow]


def rig_board(*, rig_id: int, usd_per_kwh: float, limit: int = 50) -> RigBoard | None:
    """Return a rig's own leaderboard (its best run per stack × model file ×
    configuration × workload, fastest first) and its latest runs, ``limit`` of
    each; None for an unknown rig."""
    rig = Rig.objects.prefetch_related("gpus").filter(pk=rig_id).first()
    if rig is None:
        return None
    runs = ranked_runs().filter(rig_id=rig_id)
    # DISTINCT ON keeps the first row of each configuration group in this order: its fastest run.
    best_ids = (
        runs.order_by(
            "stack_id", "model_file_id", "configuration_id", "workload_id", "-decode_tokens_per_s_mean", "-pk"
        )
        .distinct("stack_id", "model_file_id", "configuration_id", "workload_id")
        .values("pk")
    )
    best = runs.filter(pk__in=best_ids).order_by("-decode_tokens_per_s_mean", "-pk")[:limit]
    history = runs.order_by("-created_at", "-pk")[:limit]
    return RigBoard(
        rig=rig,
        best=[run_row(r, usd_per_kwh=usd_per_kwh) for r in best],
        history=[run_row(r, usd_per_kwh=usd_per_kwh) for r in history],
    )


def querystring(params: Mapping[str, Any], **changes: Any) -> str:
    """Return ``params`` as a query string with ``changes`` applied (None removes a key)."""
    merged = QueryDict(mutable=True)
    for key, value in params.items():
        if key not in changes and value not in ("", None):
            merged[key] = value
    for key, value in changes.items():
        if value not in ("", None):
            merged[key] = value
    return merged.urlencode()

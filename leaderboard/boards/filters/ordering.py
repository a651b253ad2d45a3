"""The leaderboard's order: each sort by the value its column shows, and the
windows that let a page of a sort no index orders read only the runs that can reach it."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, timedelta
from typing import Any

from django.db.models import (
    Case,
    CharField,
    ExpressionWrapper,
    F,
    FloatField,
    Min,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    Value,
    When,
)
from django.db.models.functions import Cast, Lower, NullIf, TruncDate

from leaderboard.boards.filters.query import day_start
from leaderboard.boards.filters.querystring import SORTS
from leaderboard.results.models import Provenance, RigGpu, Run, Source, SpeculativeType

# Columns the ranked queryset never has NULL in (it requires a decode figure).
NEVER_NULL = {
    "decode_tokens_per_s_mean",
    "rig__name",
    "stack__engine",
    "model_file__name",
    "model_file__quantization",
    "provenance",
    "created_at",
}


def shown_value(expression: str, usd_per_kwh: float) -> Any:
    """Return the ORDER BY expression of a sort: the value its column shows."""
    if expression in ("rig__name", "model_file__name", "model_file__quantization", "stack__engine"):
        return Lower(expression)
    if expression == "n_samples":
        # A reported run has no samples of its own: its n cell is blank, not 0.
        return NullIf(F("n_samples"), Value(0))
    if expression == "configuration__speculative_type":
        # The label a cell prints ("MTP", "Draft model"); none and not stated are blank cells.
        labels = [
            When(configuration__speculative_type=v, then=Value(str(label).lower()))
            for v, label in SpeculativeType.choices
            if v not in (SpeculativeType.NONE, SpeculativeType.UNKNOWN)
        ]
        return Case(*labels, default=Value(None), output_field=CharField())
    if expression == "shown_cost":
        # A row prints its electricity cost at the page's $/kWh, else the price its article printed.
        electricity = ExpressionWrapper(Value(usd_per_kwh * 1_000_000) / F("tokens_per_kwh"), output_field=FloatField())
        return Case(
            When(tokens_per_kwh__gt=0, then=electricity), default=F("cost_usd_per_mtok"), output_field=FloatField()
        )
    if expression == "shown_date":
        # A reported run prints its source's date (YYYY, YYYY-MM or a day; undated: blank), a measured one its day.
        return Case(
            When(provenance=Provenance.REPORTED, then=NullIf(F("source__published_date"), Value(""))),
            default=Cast(TruncDate("created_at"), CharField()),
            output_field=CharField(),
        )
    return F(expression)


# Sorts whose shown value no index orders, narrowed by sort_window before sorting.
WINDOWED_SORTS = ("date", "cost", "bound")


def sort_window(queryset: QuerySet[Run], sort: str, *, rows: int, usd_per_kwh: float) -> QuerySet[Run]:
    """Return the runs of ``queryset`` that can be among the first ``rows`` of ``sort``:
    fewer for the sorts on an expression (WINDOWED_SORTS), every run for the others."""
    if sort.lstrip("-") == "date":
        return date_sort_window(queryset, sort, rows=rows)
    if sort.lstrip("-") == "cost":
        return cost_sort_window(queryset, sort, rows=rows, usd_per_kwh=usd_per_kwh)
    if sort.lstrip("-") == "bound":
        return bound_sort_window(queryset, sort, rows=rows)
    return queryset


# Room for the division's rounding: a run past the edge by less than this is kept.
_EDGE_SLACK = 1e-9


def model_rank_window(
    queryset: QuerySet[Run], runs_of_file: Callable[[int], QuerySet[Run]], model_files: list[int], *, rows: int
) -> QuerySet[Run]:
    """Return the runs of ``queryset`` (filtered to ``model_files``) that can be among
    the first ``rows`` of the default ranking (decode t/s, then run id, descending):
    each model file's first ``rows`` in that order, a walk of its rank index
    (``run_model_rank_idx``) that stops there. ``runs_of_file(id)``: the same filters
    as ``queryset`` with that one file in place of the list.

    One index serves ``model_file_id IN (...)`` only as unordered: the plan walked
    the whole ranking (``run_rank_idx``) for the few files' runs, 35k rows read for
    57 kept (0.2-0.5 s at a million runs); a union of the files' walks reads ~50 each.
    A walk is not ``queryset`` narrowed to its file: PostgreSQL multiplies the two
    conditions' selectivities (``IN (1, 9) AND = 1``), estimated one busy file's 16,701
    runs at 259 and read and sorted them all (100 ms at a million runs) instead of walking."""
    if rows < 1 or len(model_files) < 2:
        return queryset
    walks = [
        runs_of_file(model_file).order_by(F("decode_tokens_per_s_mean").desc(), "-pk").values("pk")[:rows]
        for model_file in model_files
    ]
    return queryset.filter(pk__in=walks[0].union(*walks[1:], all=True))


def cost_sort_window(queryset: QuerySet[Run], sort: str, *, rows: int, usd_per_kwh: float) -> QuerySet[Run]:
    """Return the runs of ``queryset`` that can be among the first ``rows`` of a sort on
    the shown cost (``cost`` / ``-cost``): the electricity cost where a run has tokens/kWh,
    else the published price (``shown_value``).

    The electricity cost falls as tokens/kWh rises, so the ``rows``-th run by tokens/kWh
    (an index, ``run_ranked_kwh_idx``) names a cost no run past the page can beat: kept
    are the runs at least that efficient and the runs whose published price is at least
    that low (``run_published_cost_idx``). At no price every electricity cost is 0 and
    ties: nothing is left out."""
    if rows < 1 or usd_per_kwh <= 0:
        return queryset
    cheapest_first = not sort.startswith("-")
    efficient = queryset.filter(tokens_per_kwh__gt=0).order_by(
        F("tokens_per_kwh").desc(nulls_last=True) if cheapest_first else F("tokens_per_kwh").asc()
    )
    edge = efficient.values_list("tokens_per_kwh", flat=True)[rows - 1 : rows].first()
    if edge is None:
        return queryset
    cost = usd_per_kwh * 1_000_000 / edge
    if cheapest_first:
        kept = Q(tokens_per_kwh__gte=edge * (1 - _EDGE_SLACK)) | Q(cost_usd_per_mtok__lte=cost * (1 + _EDGE_SLACK))
    else:
        kept = Q(tokens_per_kwh__gt=0, tokens_per_kwh__lte=edge * (1 + _EDGE_SLACK)) | Q(
            cost_usd_per_mtok__gte=cost * (1 - _EDGE_SLACK)
        )
    return queryset.filter(kept)


def bound_sort_window(queryset: QuerySet[Run], sort: str, *, rows: int) -> QuerySet[Run]:
    """Return the runs of ``queryset`` that can be among the first ``rows`` of a sort on the
    stored share of the bound (``bound`` / ``-bound``).

    Sorted as it is, the sort joins every filtered run to its share and orders them all
    (120 ms at 100k runs): the filters are on the runs, the share on its own table. But the
    ``rows``-th run with a share, walked in the share's own index (``run_bound_share_idx``
    and its ascending twin) and checked against the filters run by run, names a share no
    run past the page can beat: kept are the runs with a share at least that good. Fewer
    than ``rows`` runs with a share: the page reaches the blank ones, nothing is left out."""
    if rows < 1:
        return queryset
    share = F("bound_share__decode_share")
    run_id = F("bound_share__run_id")
    descending = sort.startswith("-")
    # In the index's own order (NULLS LAST both ways), so the walk stops at the edge.
    walk = (share.desc(nulls_last=True), run_id.desc()) if descending else (share.asc(nulls_last=True), run_id.asc())
    edge = (
        queryset.filter(bound_share__decode_share__isnull=False)
        .order_by(*walk)
        .values_list("bound_share__decode_share", flat=True)[rows - 1 : rows]
        .first()
    )
    if edge is None:
        return queryset
    kept = Q(bound_share__decode_share__gte=edge) if descending else Q(bound_share__decode_share__lte=edge)
    return queryset.filter(kept)


def date_sort_window(queryset: QuerySet[Run], sort: str, *, rows: int) -> QuerySet[Run]:
    """Return the runs of ``queryset`` that can be among the first ``rows`` of a sort on
    the shown date (``date`` / ``-date``).

    The shown date is an expression over two tables (a reported run's source date, a
    measured run's day), which no index orders: sorted as it is, every filtered run is
    read (90 ms at 100k runs, growing with the table). But a measured run shows the day
    of ``created_at``, so the ``rows``-th measured run in ``created_at`` order names a day
    no run past the page can reach: kept are the measured runs from that day on and the
    reported runs whose date sorts there too (the same text comparison as the sort), an
    index range of about a day's runs. A run with no date sorts last either way."""
    if rows < 1:
        return queryset
    descending = sort.startswith("-")
    measured = ~Q(provenance=Provenance.REPORTED)
    edge = (
        queryset.filter(measured)
        .order_by("-created_at" if descending else "created_at")
        .values_list("created_at", flat=True)[rows - 1 : rows]
        .first()
    )
    if edge is None:  # fewer measured runs than that: nothing to leave out
        return queryset
    day = edge.astimezone(UTC).date()
    shown = NullIf(F("published_date"), Value(""))
    if descending:
        kept = measured & Q(created_at__gte=day_start(day))
        sources = Source.objects.annotate(shown=shown).filter(shown__gte=day.isoformat())
    else:
        kept = measured & Q(created_at__lt=day_start(day + timedelta(days=1)))
        sources = Source.objects.annotate(shown=shown).filter(shown__lte=day.isoformat())
    # Both sides on the runs' own columns (a source id list, not a join), so each is an index range.
    return queryset.filter(kept | Q(provenance=Provenance.REPORTED, source_id__in=sources.values("pk")))


def runs_sort(queryset: QuerySet[Run], sort: str, *, usd_per_kwh: float = 0.15) -> QuerySet[Run]:
    """Return ``queryset`` ordered by ``sort`` on the values the column shows
    (``usd_per_kwh`` prices the electricity cost), missing values last, ties
    broken by decode t/s (fastest first), then by run id."""
    descending = sort.startswith("-")
    expression = SORTS[sort.lstrip("-")][1]
    if expression == "gpu_sort":
        first_gpu = RigGpu.objects.filter(rig=OuterRef("rig")).values("rig").annotate(m=Min(Lower("model"))).values("m")
        queryset = queryset.annotate(gpu_sort=Subquery(first_gpu))
    field = shown_value(expression, usd_per_kwh)
    if expression in NEVER_NULL:
        # No NULLs to place: plain DESC keeps the order the rank index stores.
        order = field.desc() if descending else field.asc()
    else:
        order = field.desc(nulls_last=True) if descending else field.asc(nulls_last=True)
    if expression == "decode_tokens_per_s_mean":
        return queryset.order_by(order, "-pk" if descending else "pk")
    # Ties (and rows where the column is blank, all last) fall back to the
    # default ranking, so a column blank on every row still gives a meaningful order.
    return queryset.order_by(order, F("decode_tokens_per_s_mean").desc(), "-pk")

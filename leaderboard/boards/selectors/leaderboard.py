"""Reads for the leaderboard and rig pages. Every function here issues a fixed
number of queries whatever the number of rows it returns."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.core.paginator import Page
from django.db.models import Count, QuerySet
from django.http import QueryDict
from django.utils.http import urlencode

from leaderboard.boards.filters import (
    DEFAULT_SORT,
    WINDOWED_SORTS,
    LeaderboardFilterForm,
    best_of_each_configuration,
    chosen_model_files,
    configuration_groups,
    filter_options,
    model_rank_window,
    parse_per_page,
    parse_sort,
    ranking_sort,
    rigs_only_with,
    runs_filter,
    runs_sort,
    sort_window,
)
from leaderboard.boards.rows import LeaderboardRow, row_from_values
from leaderboard.boards.speedups.row_reads import row_parts
from leaderboard.core.datacache import while_data_unchanged
from leaderboard.core.paging import CappedCountPaginator
from leaderboard.results.models import Rig, RigGpu, Run, RunStatus, Workload, gpu_label


def usd_per_kwh_from(raw: Any) -> float:
    """Return the electricity price to use: ``raw`` when it is a number in 0..10, else the setting."""
    try:
        value = float(raw)
    except (TypeError, ValueError):
        return settings.RIGBOARD_ELECTRICITY_USD_PER_KWH
    if not 0 <= value <= 10:
        return settings.RIGBOARD_ELECTRICITY_USD_PER_KWH
    return value


class RankedPaginator(CappedCountPaginator):
    """The board's capped count, with its rows sliced from ``window(rows)`` when given."""

    def __init__(self, *args: Any, window: Any = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.window = window

    def page(self, number: Any) -> Page[Any]:
        """Return page ``number``; its rows are sliced from ``window(rows)`` when given: the
        object list narrowed to what can be among its first ``rows`` (the count is not)."""
        if self.window is None:
            return super().page(number)
        number = self.validate_number(number)
        bottom = (number - 1) * self.per_page
        top = bottom + self.per_page
        if top + self.orphans >= self.count:
            top = self.count
        return Page(self.window(top)[bottom:top], number, self)


BEST_COUNT_CAP = 1_000


@dataclass(frozen=True)
class LeaderboardView:
    form: LeaderboardFilterForm
    rows: list[LeaderboardRow]
    page: Page[int] | None
    sort: str
    per_page: int
    usd_per_kwh: float
    total: int
    capped: bool = False


def rows_by_ids(ids: list[int], *, usd_per_kwh: float) -> list[LeaderboardRow]:
    """Return the leaderboard rows of these runs in the order of ``ids`` (unknown ids
    left out), in four queries (the runs' columns, their samples' peak VRAM, their
    stored shares of the bound, their rigs' GPUs), compiled once per connection
    (``speedups.row_reads``). Plain values, not model instances: building seven model
    objects per row cost more than the SQL."""
    parts = row_parts(ids)
    rows = []
    for run_id in ids:
        v = parts.values.get(run_id)
        if v is None:
            continue
        gpus = parts.gpus.get(v["rig_id"], [])
        rows.append(
            row_from_values(
                v,
                gpus=gpu_label(gpus),
                usd_per_kwh=usd_per_kwh,
                gpu_models=tuple(dict.fromkeys(model for model, _ in gpus)),
                vram_peak_mib=parts.peak_vram_mib.get(run_id),
                decode_share_of_bound=parts.shares.get(run_id),
            )
        )
    return rows


def _filtered(data: dict[str, Any], model_files: list[int] | None) -> QuerySet[Run]:
    """Return the runs a valid form's ``cleaned_data`` keeps, unordered: what the leaderboard
    ranks. Runs of community rigs awaiting review (or rejected) stay out."""
    base = Run.objects.public().filter(status=RunStatus.FINISHED, decode_tokens_per_s_mean__isnull=False)
    return runs_filter(base, data, model_files=model_files)


@dataclass(frozen=True)
class LeaderboardExport:
    """The whole filtered set a leaderboard view ranks, in its order: ``ids`` is
    None when the form has errors (``form.errors`` says which field)."""

    form: LeaderboardFilterForm
    sort: str
    usd_per_kwh: float
    ids: QuerySet[Run, int] | None


def leaderboard_export(params: QueryDict) -> LeaderboardExport:
    """Return every run the leaderboard for ``params`` ranks, on all its pages, in
    the page's order (the same form, filters, sort and price as ``leaderboard_view``;
    ``page`` and ``per_page`` are ignored). Read ``ids`` with ``export_rows``."""
    form = LeaderboardFilterForm(params, options=filter_options())
    sort = parse_sort(params.get("sort"))
    usd_per_kwh = usd_per_kwh_from(params.get("usd_per_kwh"))
    if not form.is_valid():
        return LeaderboardExport(form, sort, usd_per_kwh, None)
    ranking = ranking_sort(sort, form.cleaned_data)
    filtered = _filtered(form.cleaned_data, chosen_model_files(form.cleaned_data))
    ids = runs_sort(filtered, ranking, usd_per_kwh=usd_per_kwh).values_list("pk", flat=True)
    return LeaderboardExport(form, sort, usd_per_kwh, ids)


EXPORT_CHUNK_ROWS = 500


def export_rows(
    ids: QuerySet[Run, int], *, usd_per_kwh: float, chunk_rows: int = EXPORT_CHUNK_ROWS
) -> Iterator[LeaderboardRow]:
    """Yield the leaderboard row of every run in ``ids``, in its order, ``chunk_rows``
    at a time (four queries a chunk, ``rows_by_ids``): the ids come through a
    server-side cursor on PostgreSQL, so memory holds one chunk whatever the set's size."""
    chunk: list[int] = []
    for run_id in ids.iterator(chunk_size=max(chunk_rows, 100)):
        chunk.append(run_id)
        if len(chunk) >= chunk_rows:
            yield from rows_by_ids(chunk, usd_per_kwh=usd_per_kwh)
            chunk = []
    if chunk:
        yield from rows_by_ids(chunk, usd_per_kwh=usd_per_kwh)


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
    # Rank on the runs table alone (joining only what a filter or the sort
    # needs), then load the page's rows with everything they show: ordering
    # 100k joined rows to keep 50 costs far more than ordering the ids.
    ranking = ranking_sort(sort, form.cleaned_data)
    model_files = chosen_model_files(form.cleaned_data)
    filtered = _filtered(form.cleaned_data, model_files)

    def ranked(runs: QuerySet[Run]) -> QuerySet[Run, int]:
        return runs_sort(runs, ranking, usd_per_kwh=usd_per_kwh).values_list("pk", flat=True)

    # "Best of each" costs an index probe per run listed (filters.best_of_each_configuration),
    # so it counts at most BEST_COUNT_CAP; it counts its groups, one best run each, without one.
    best = bool(form.cleaned_data.get("best"))
    cap = BEST_COUNT_CAP if best else CappedCountPaginator.COUNT_CAP
    counted = None
    if best:
        counted = configuration_groups(_filtered({**form.cleaned_data, "best": False}, model_files))
    window = None
    if ranking.lstrip("-") in WINDOWED_SORTS:

        def window(rows: int) -> QuerySet[Run, int]:
            return ranked(sort_window(filtered, ranking, rows=rows, usd_per_kwh=usd_per_kwh))

    elif ranking == DEFAULT_SORT and model_files is not None and len(model_files) > 1:

        def window(rows: int) -> QuerySet[Run, int]:
            def runs_of_file(model_file: int) -> QuerySet[Run]:
                return _filtered(form.cleaned_data, [model_file])

            return ranked(model_rank_window(filtered, runs_of_file, model_files, rows=rows))

    paginator = RankedPaginator(ranked(filtered), per_page, count_cap=cap, window=window, counted=counted)
    page = paginator.get_page(params.get("page"))
    rows = rows_by_ids(list(page.object_list), usd_per_kwh=usd_per_kwh)
    return LeaderboardView(form, rows, page, sort, per_page, usd_per_kwh, paginator.count, paginator.capped)


@dataclass(frozen=True)
class WorkloadChoice:
    """One workload the board can rank on: the id its filter menu uses for that name
    and version, the label a visitor reads, and how many ranked runs it has."""

    workload_id: int
    label: str
    runs: int


def workload_choices(params: QueryDict) -> list[WorkloadChoice]:
    """Return the workloads of the runs the board's other filters keep (the workload
    filter itself left out), most runs first, then by label; [] for invalid filters.

    The leaderboard ranks one workload by default, the first of these: a 1.1B model's
    llama-bench tg128 figure, an Ollama eval rate and a 122B MoE's decode under a long
    prompt are measured differently and never ranked against each other unasked."""
    others = params.copy()
    for name in ("workload", "page", "sort", "per_page"):  # none of these changes the counts
        others.pop(name, None)
    return while_data_unchanged(
        "workload_choices", lambda: _workload_choices(others), key=urlencode(sorted(others.lists()), doseq=True)
    )


def _workload_choices(others: QueryDict) -> list[WorkloadChoice]:
    options = filter_options()
    form = LeaderboardFilterForm(others, options=options)
    if not form.is_valid():
        return []
    base = Run.objects.public().filter(status=RunStatus.FINISHED, decode_tokens_per_s_mean__isnull=False)
    counted = (
        runs_filter(base, form.cleaned_data)
        .order_by()
        .values("workload__name", "workload__version")
        .annotate(runs=Count("pk"))
    )
    menu = {label: pk for pk, label in options.workloads}
    choices = []
    for row in counted:
        label = str(Workload(name=row["workload__name"], version=row["workload__version"]))
        if label in menu:
            choices.append(WorkloadChoice(menu[label], label, row["runs"]))
    return sorted(choices, key=lambda c: (-c.runs, c.label))


# The address's word for "every workload in one ranking" (``workload=`` empty says the same:
# the filter form's "any").
ALL_WORKLOADS = "all"


def with_default_workload(params: QueryDict, choices: list[WorkloadChoice]) -> QueryDict:
    """Return ``params`` ranking one workload: as given when the address names one
    (``workload=all`` or empty: every workload, mixed, as the visitor chose), else the
    workload with the most runs (``choices[0]``)."""
    if params.get("workload") == ALL_WORKLOADS:
        mixed = params.copy()
        mixed["workload"] = ""
        return mixed
    if "workload" in params or not choices:
        return params
    chosen = params.copy()
    chosen["workload"] = str(choices[0].workload_id)
    return chosen


def leaderboard_query(params: QueryDict, choices: list[WorkloadChoice] | None = None) -> QueryDict:
    """Return the query the leaderboard at ``params`` ranks by: its default workload
    added (``with_default_workload``) unless a concurrency level is asked for (that
    board ranks every workload's runs at the level); ``choices``: workload_choices(params)
    when the caller has them."""
    if params.get("concurrency"):
        return with_default_workload(params, [])
    return with_default_workload(params, workload_choices(params) if choices is None else choices)


@dataclass(frozen=True)
class RigBoard:
    rig: Rig
    best: list[LeaderboardRow]
    history: list[LeaderboardRow]

    @property
    def cards_not_stated(self) -> bool:
        """Return True when the rig mixes GPU models, so no run of it says which card ran it."""
        return len({gpu.model for gpu in self.rig.gpus.all()}) > 1


def rig_board(*, rig_id: int, usd_per_kwh: float, viewer: Any = None, limit: int = 50) -> RigBoard | None:
    """Return a rig's own leaderboard (its best run per stack × model file ×
    configuration × workload, fastest decoder first) and its latest finished runs
    (with or without decode figures), ``limit`` of each; None for an unknown rig
    or one hidden from ``viewer`` (None: the public)."""
    rig = Rig.objects.visible_to(viewer).prefetch_related("gpus").filter(pk=rig_id).first()
    if rig is None:
        return None
    finished = Run.objects.filter(rig_id=rig_id, status=RunStatus.FINISHED).order_by()
    runs = finished.filter(decode_tokens_per_s_mean__isnull=False)
    best_ids = list(
        best_of_each_configuration(runs)
        .order_by("-decode_tokens_per_s_mean", "-pk")
        .values_list("pk", flat=True)[:limit]
    )
    # The latest runs are every finished run, a prefill-only one (llama-bench's pp tests) too.
    history_ids = list(finished.order_by("-created_at", "-pk").values_list("pk", flat=True)[:limit])
    rows = {row.run_id: row for row in rows_by_ids([*best_ids, *history_ids], usd_per_kwh=usd_per_kwh)}
    return RigBoard(
        rig=rig,
        best=[rows[i] for i in best_ids if i in rows],
        history=[rows[i] for i in history_ids if i in rows],
    )


def rigs_mixing(*, gpu: str) -> list[Rig]:
    """Return the public rigs that have a ``gpu`` card and a card of another model,
    by name: their runs are not ranked on ``gpu``'s page (``filters.rigs_only_with``)."""
    return list(
        Rig.objects.public()
        .filter(pk__in=RigGpu.objects.filter(model=gpu).values("rig"))
        .exclude(pk__in=rigs_only_with(gpu))
        .order_by("name")
    )

"""Reads for the concurrency views: a run's levels and latency percentiles, several
runs at one level (compare), and the leaderboard ranked at one level.

Query parameters: ``concurrency`` (a level, whole number ≥ 1) and ``floor``
(per-stream t/s a stream must keep, a number > 0). A bad value gives an error
naming the parameter and no figures for it; the rest of the page is unaffected."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Exists, OuterRef, QuerySet, Subquery

from leaderboard.boards.charts.concurrency import ConcurrencySeries, LevelData, concurrency_figure, first_below
from leaderboard.boards.filters import LeaderboardFilterForm, runs_filter
from leaderboard.boards.rows import run_label
from leaderboard.results.models import ConcurrencyLevel, ConcurrencyRequest, Run, RunStatus, Sample, SpeculativeType
from runners.distribution import StreamTime, latency_percentiles, stream_time

MAX_LEVEL = 100_000


@dataclass(frozen=True)
class Parsed:
    value: Any = None
    error: str = ""


def parse_concurrency(raw: str | None) -> Parsed:
    """Return the ``concurrency`` parameter: None when absent, else a whole number ≥ 1 or an error."""
    if raw is None or raw.strip() == "":
        return Parsed()
    text = raw.strip()
    if not text.lstrip("-").isdigit():
        return Parsed(error=f"concurrency: a whole number of streams is required, not {text[:20]!r}")
    value = int(text)
    if not 1 <= value <= MAX_LEVEL:
        return Parsed(error=f"concurrency: must be between 1 and {MAX_LEVEL} streams, got {value}")
    return Parsed(value)


def parse_floor(raw: str | None) -> Parsed:
    """Return the ``floor`` parameter (per-stream t/s): None when absent, else a number > 0 or an error."""
    if raw is None or raw.strip() == "":
        return Parsed()
    try:
        value = float(raw)
    except ValueError:
        return Parsed(error=f"floor: a number of tokens per second is required, not {raw.strip()[:20]!r}")
    if not math.isfinite(value) or value <= 0:
        return Parsed(error=f"floor: must be a positive number of tokens per second, got {raw.strip()[:20]}")
    return Parsed(value)


def levels_by_run(runs: Sequence[Run]) -> dict[int, list[ConcurrencyLevel]]:
    """Return each run's concurrency levels (lowest first) in one query; raw requests not loaded."""
    out: dict[int, list[ConcurrencyLevel]] = {run.pk: [] for run in runs}
    for level in ConcurrencyLevel.objects.filter(run__in=[r.pk for r in runs]).order_by("run_id", "concurrency"):
        out[level.run_id].append(level)
    return out


def _level_data(level: ConcurrencyLevel) -> LevelData:
    return LevelData(
        concurrency=level.concurrency,
        output_tokens_per_s=level.output_tokens_per_s,
        decode_tokens_per_s_mean=level.decode_tokens_per_s_mean,
        decode_tokens_per_s_p50=level.decode_tokens_per_s_p50,
        decode_tokens_per_s_p90=level.decode_tokens_per_s_p90,
        ttft_ms_p90=level.ttft_ms_p90,
        energy_j_per_token=level.energy_j_per_token,
    )


@dataclass(frozen=True)
class LatencyFigure:
    name: str
    value: float | None
    reason: str


_LATENCY_LABELS = {
    "ttft_ms_p50": "TTFT p50",
    "ttft_ms_p90": "TTFT p90",
    "ttft_ms_p99": "TTFT p99",
    "itl_ms_p50": "inter-token p50",
    "itl_ms_p99": "inter-token p99",
}


# The run page's headline shows these two; its latency card shows the rest.
HEADLINE_LATENCY = ("ttft_ms_p50", "ttft_ms_p90")


def latency_figures(samples: Sequence[Sample]) -> dict[str, LatencyFigure]:
    """Return the single-stream TTFT and inter-token latency percentiles (ms) of a
    run's samples by key (``ttft_ms_p50``…); a figure of fewer than two values is
    None with the reason. No samples, no figures."""
    if not samples:
        return {}
    return {k: LatencyFigure(_LATENCY_LABELS[k], f.value, f.reason) for k, f in latency_percentiles(samples).items()}


@dataclass(frozen=True)
class AtLevel:
    """One run's figures at the chosen level (None: the run has no such level)."""

    run: Run
    label: str
    level: ConcurrencyLevel | None
    delta_pct: float | None = None  # aggregate t/s against the baseline's, at the same level


@dataclass
class ConcurrencyView:
    """What the concurrency partial shows for one or more runs."""

    series: list[ConcurrencySeries] = field(default_factory=list)
    levels: dict[int, list[ConcurrencyLevel]] = field(default_factory=dict)
    figure: dict[str, Any] = field(default_factory=dict)
    floor: float | None = None
    concurrency: int | None = None
    at_level: list[AtLevel] = field(default_factory=list)
    below: list[tuple[str, int]] = field(default_factory=list)  # (run label, first level below the floor)
    errors: list[str] = field(default_factory=list)
    # Each run's 1-stream level with where its wall time went (aggregate against per-stream, explained).
    single_stream: list[tuple[Run, ConcurrencyLevel, StreamTime]] = field(default_factory=list)

    @property
    def has_levels(self) -> bool:
        return any(self.levels.values())


def _single_stream(
    runs: Sequence[Run], levels: Mapping[int, list[ConcurrencyLevel]]
) -> list[tuple[Run, ConcurrencyLevel, StreamTime]]:
    """Return each run's 1-stream level with its wall time split (one query for the requests)."""
    ones = {run.pk: lv for run in runs for lv in levels.get(run.pk, []) if lv.concurrency == 1}
    if not ones:
        return []
    requests: dict[int, list[ConcurrencyRequest]] = {}
    for request in ConcurrencyRequest.objects.filter(level__in=list(ones.values())).order_by("level_id", "index"):
        requests.setdefault(request.level_id, []).append(request)
    out = []
    for run in runs:
        level = ones.get(run.pk)
        split = stream_time(requests.get(level.pk, [])) if level is not None else None
        if level is not None and split is not None:
            out.append((run, level, split))
    return out


def concurrency_view(runs: Sequence[Run], params: Mapping[str, str], *, baseline: Run | None = None) -> ConcurrencyView:
    """Return the concurrency figure and tables for ``runs`` (one query), with the
    ``floor`` and ``concurrency`` query parameters applied."""
    floor, level = parse_floor(params.get("floor")), parse_concurrency(params.get("concurrency"))
    view = ConcurrencyView(
        floor=floor.value, concurrency=level.value, errors=[e for e in (floor.error, level.error) if e]
    )
    view.levels = levels_by_run(runs)
    view.series = [
        ConcurrencySeries(label=run_label(run), levels=[_level_data(lv) for lv in view.levels[run.pk]]) for run in runs
    ]
    view.figure = concurrency_figure(view.series, floor=view.floor)
    view.single_stream = _single_stream(runs, view.levels)
    if view.floor is not None:
        for s in view.series:
            below = first_below(s.levels, view.floor)
            if below is not None:
                view.below.append((s.label, below.concurrency))
    if view.concurrency is not None:
        chosen = {
            run.pk: next((lv for lv in view.levels[run.pk] if lv.concurrency == view.concurrency), None) for run in runs
        }
        base = chosen.get(baseline.pk) if baseline is not None else None
        for run in runs:
            lv = chosen[run.pk]
            delta = None
            if lv is not None and base is not None and base.output_tokens_per_s and lv.output_tokens_per_s is not None:
                delta = 100.0 * (lv.output_tokens_per_s - base.output_tokens_per_s) / base.output_tokens_per_s
            view.at_level.append(AtLevel(run=run, label=run_label(run), level=lv, delta_pct=delta))
    return view


@dataclass(frozen=True)
class BoardRow:
    rank: int
    run_id: int
    rig: str
    model: str
    quantization: str
    engine: str
    speculative_type: str
    level: ConcurrencyLevel

    @property
    def speculative_label(self) -> str:
        """Return the speculative decoding as the leaderboard's menu names it ("off", "MTP")."""
        if self.speculative_type == SpeculativeType.NONE:
            return "off"
        return (
            str(SpeculativeType(self.speculative_type).label)
            if self.speculative_type in SpeculativeType.values
            else self.speculative_type
        )


@dataclass
class ConcurrencyBoard:
    concurrency: int | None = None
    rows: list[BoardRow] = field(default_factory=list)
    error: str = ""
    limit: int = 50
    # Runs measured at this level but left out because their output checks failed
    # (ids, at most ``limit``): the board names them rather than saying none was measured.
    left_out_failed: list[int] = field(default_factory=list)


def concurrency_board(
    params: Mapping[str, str], form: LeaderboardFilterForm, *, limit: int = 50
) -> ConcurrencyBoard | None:
    """Return the finished runs measured at ``?concurrency=N``, with the leaderboard's
    filters applied, ranked by aggregate output t/s at that level (three queries), and
    the runs at that level the filters left out only for their failed output checks;
    None when no level is asked for."""
    parsed = parse_concurrency(params.get("concurrency"))
    if parsed.error:
        return ConcurrencyBoard(error=parsed.error)
    if parsed.value is None:
        return None
    board = ConcurrencyBoard(concurrency=parsed.value, limit=limit)
    if not form.is_valid():
        return board
    at = ConcurrencyLevel.objects.filter(run=OuterRef("pk"), concurrency=parsed.value)
    runs: QuerySet[Run] = runs_filter(Run.objects.public().filter(status=RunStatus.FINISHED), form.cleaned_data)
    ranked = (
        runs.annotate(at_level=Subquery(at.values("output_tokens_per_s")[:1]))
        .filter(at_level__isnull=False)
        .order_by("-at_level", "-pk")
        .values_list("pk", "rig__name", "model_file__name", "model_file__quantization", "stack__engine",
                     "configuration__speculative_type")[:limit]
    )  # fmt: skip
    found = list(ranked)
    levels = {
        lv.run_id: lv
        for lv in ConcurrencyLevel.objects.filter(run_id__in=[r[0] for r in found], concurrency=parsed.value)
    }
    board.rows = [
        BoardRow(rank, pk, rig, model, quant, engine, spec, levels[pk])
        for rank, (pk, rig, model, quant, engine, spec) in enumerate(found, start=1)
        if pk in levels
    ]
    if not form.cleaned_data.get("failed"):
        with_failed = runs_filter(
            Run.objects.public().filter(status=RunStatus.FINISHED), {**form.cleaned_data, "failed": True}
        )
        board.left_out_failed = list(
            with_failed.filter(Exists(at))
            .exclude(pk__in=runs.values("pk"))
            .order_by("-pk")
            .values_list("pk", flat=True)[:limit]
        )
    return board


@dataclass(frozen=True)
class Pickable:
    """A run with concurrency levels, offered on /concurrency/ when no run is chosen."""

    run: Run
    label: str
    levels: list[int]
    best_output_tokens_per_s: float | None


def runs_with_levels(*, limit: int = 50) -> list[Pickable]:
    """Return the public finished runs that have concurrency levels, newest first,
    with their levels and best aggregate output t/s (two queries)."""
    runs = list(
        Run.objects.public()
        .filter(status=RunStatus.FINISHED, concurrency_levels__isnull=False)
        .distinct()
        .select_related("rig", "model_file", "stack", "configuration")
        .order_by("-created_at", "-pk")[:limit]
    )
    levels: dict[int, list[ConcurrencyLevel]] = {}
    for level in ConcurrencyLevel.objects.filter(run__in=runs).order_by("concurrency"):
        levels.setdefault(level.run_id, []).append(level)
    out = []
    for run in runs:
        mine = levels.get(run.pk, [])
        speeds = [lv.output_tokens_per_s for lv in mine if lv.output_tokens_per_s is not None]
        out.append(Pickable(run, run_label(run), [lv.concurrency for lv in mine], max(speeds, default=None)))
    return out

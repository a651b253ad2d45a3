"""Reads for the run and compare pages."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.db.models import F, Prefetch

from leaderboard.boards.rows import LeaderboardRow
from leaderboard.results.models import RigGpu, Run, RunQuerySet, RunStatus, Sample, SweepPoint
from leaderboard.results.speedups.cursor import server_bound

MAX_COMPARED = 6


def _runs_with_everything() -> RunQuerySet:
    return Run.objects.select_related(
        "rig", "stack", "model_file", "configuration", "workload", "source", "bound_share"
    ).prefetch_related(
        Prefetch("rig__gpus", queryset=RigGpu.objects.order_by("position", "id")),
        Prefetch("samples", queryset=Sample.objects.order_by("index")),
        # Shortest context first; a point without a token count (a printed '198K')
        # last on every database (SQLite sorts NULL first, PostgreSQL last).
        Prefetch("sweep_points", queryset=SweepPoint.objects.order_by(F("ctx_tokens").asc(nulls_last=True), "pk")),
    )


def run_detail(*, run_id: int, viewer: Any = None) -> Run | None:
    """Return the run with its rig's GPUs, samples (by repetition) and sweep
    points (by depth) prefetched; None when there is no such run or its rig is
    hidden from ``viewer`` (None: the public). Its reads bind on the server, so each is
    planned once per connection (``server_bound``: the run's nine-table read spent 3.2 of
    its 3.4 ms planning)."""
    with server_bound():
        return _runs_with_everything().visible_to(viewer).filter(pk=run_id).first()


@dataclass(frozen=True)
class SweepRow:
    point: SweepPoint
    prefill_delta_pct: float | None
    decode_delta_pct: float | None
    ttft_delta_pct: float | None
    tokens_per_kwh_delta_pct: float | None


def _delta(value: float | None, first: float | None) -> float | None:
    if value is None or first is None or first == 0:
        return None
    return 100.0 * (value - first) / first


def sweep_rows(points: Sequence[SweepPoint]) -> list[SweepRow]:
    """Return the sweep with each metric's change in percent against the first
    (shallowest) depth; the first row's deltas are 0, a missing figure's None."""
    if not points:
        return []
    first = points[0]
    return [
        SweepRow(
            point=p,
            prefill_delta_pct=_delta(p.prefill_tokens_per_s, first.prefill_tokens_per_s),
            decode_delta_pct=_delta(p.decode_tokens_per_s, first.decode_tokens_per_s),
            ttft_delta_pct=_delta(p.ttft_ms, first.ttft_ms),
            tokens_per_kwh_delta_pct=_delta(p.tokens_per_kwh, first.tokens_per_kwh),
        )
        for p in points
    ]


def parse_run_ids(raw: Sequence[str], *, limit: int | None = MAX_COMPARED) -> list[int]:
    """Return distinct positive run ids from ``?runs=1&runs=2`` or ``?runs=1,2``, in order,
    at most ``limit`` (None: all, so a caller can say which it left out)."""
    ids: list[int] = []
    for chunk in raw:
        for part in chunk.split(","):
            part = part.strip()
            if part.isdigit() and int(part) > 0 and int(part) not in ids:
                ids.append(int(part))
    return ids if limit is None else ids[:limit]


def runs_for_compare(*, run_ids: Sequence[int], viewer: Any = None) -> list[Run]:
    """Return the runs with these ids in the order given (unknown ids, and those of
    rigs hidden from ``viewer``, are skipped), each with its samples and sweep
    points: four queries whatever the count."""
    runs = _runs_with_everything().visible_to(viewer).filter(pk__in=list(run_ids))
    by_id = {run.pk: run for run in runs}
    return [by_id[i] for i in run_ids if i in by_id]


def same_key_peers(*, run: Run, usd_per_kwh: float, limit: int = MAX_COMPARED - 1) -> list[LeaderboardRow]:
    """Return up to ``limit`` other finished runs with ``run``'s comparison key
    (GPUs, model file, workload), fastest first, without failed output checks and
    without hidden rigs' runs: what "compare my run against these" offers. Three queries."""
    from leaderboard.boards.selectors.leaderboard import rows_by_ids

    ids = list(
        Run.objects.public()
        .filter(comparison_key=run.comparison_key, status=RunStatus.FINISHED, decode_tokens_per_s_mean__isnull=False)
        .exclude(pk=run.pk)
        .filter(failed_checks=0)
        .order_by("-decode_tokens_per_s_mean", "-pk")
        .values_list("pk", flat=True)[:limit]
    )
    return rows_by_ids(ids, usd_per_kwh=usd_per_kwh)

"""Compared runs at matching context: the depth each run's headline figure was
measured at, and the depths every run's sweep shares, like for like.

A run summed up by its sweep (``SummarySource.SWEEP``) is headlined by its
shallowest point (results.services.summary.sweep_headline): seed 001's 122B at
4K (46.3 t/s) against the 397B printed only at 8K (42.1 t/s) is a −9.1% that
mixes the model with the depth; at 8K, where both were measured, it is 45.9
against 42.1 (−8.3%). Pure: takes runs loaded with their sweep points."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from leaderboard.boards.charts.labels import ctx_label, ctx_tokens_from_label
from leaderboard.results.models import Run, SummarySource, SweepPoint
from leaderboard.results.services.summary import sweep_headline
from runners import stats


def _depth_tokens(point: SweepPoint) -> int | None:
    # A printed '198K' without a count stands at 198 × 1024, as the sweep chart places it.
    return point.ctx_tokens if point.ctx_tokens is not None else ctx_tokens_from_label(point.ctx_label)


def _depth_label(point: SweepPoint) -> str:
    tokens = _depth_tokens(point)
    return point.ctx_label or (ctx_label(tokens) if tokens is not None else "")


@dataclass(frozen=True)
class Depth:
    """A context depth: its token count (None for a printed label alone) and its label as printed."""

    ctx_tokens: int | None
    label: str


def headline_depth(run: Run) -> Depth | None:
    """Return the context depth ``run``'s headline decode figure was measured at:
    known for a run summed up by its sweep; None otherwise (the depth of a run's
    repetitions is its workload's prompt, not a sweep's)."""
    if run.summary_source != SummarySource.SWEEP:
        return None
    point = sweep_headline(list(run.sweep_points.all()))
    return Depth(_depth_tokens(point), _depth_label(point)) if point is not None else None


@dataclass(frozen=True)
class MatchedCell:
    """One run's decode t/s at a matched depth and its change against the baseline's there."""

    run_id: int
    decode_tokens_per_s: float
    delta_pct: float | None
    is_baseline: bool


@dataclass(frozen=True)
class MatchedDepth:
    """One context depth at which every compared run's sweep measured decode t/s:
    a cell per run, in the runs' order."""

    ctx_tokens: int
    label: str
    cells: list[MatchedCell]


def matching_depths(runs: Sequence[Run], baseline: Run) -> list[MatchedDepth]:
    """Return the depths at which every one of ``runs`` has a sweep point with decode
    t/s, shallowest first; empty when fewer than two runs or no depth is shared."""
    if len(runs) < 2:
        return []
    by_run: list[dict[int, SweepPoint]] = []
    for run in runs:
        points: dict[int, SweepPoint] = {}
        for point in run.sweep_points.all():
            tokens = _depth_tokens(point)
            if tokens is not None and point.decode_tokens_per_s is not None:
                points.setdefault(tokens, point)
        by_run.append(points)
    shared = sorted(set.intersection(*(set(points) for points in by_run)))
    base_index = next(i for i, run in enumerate(runs) if run.pk == baseline.pk)
    out = []
    for tokens in shared:
        values = [float(points[tokens].decode_tokens_per_s or 0) for points in by_run]
        cells = [
            MatchedCell(
                run_id=run.pk,
                decode_tokens_per_s=value,
                delta_pct=None if i == base_index else stats.relative_delta_pct(value, values[base_index]),
                is_baseline=i == base_index,
            )
            for i, (run, value) in enumerate(zip(runs, values, strict=True))
        ]
        out.append(MatchedDepth(ctx_tokens=tokens, label=_depth_label(by_run[base_index][tokens]), cells=cells))
    return out


def depths_differ(depths: Sequence[Depth | None]) -> bool:
    """Return True when two or more runs' headline depths are known and not all the same."""
    return len({(d.ctx_tokens, d.label if d.ctx_tokens is None else "") for d in depths if d is not None}) > 1


@dataclass(frozen=True)
class DepthComparison:
    """What the compare page says about depth: each run's headline depth (by run id),
    the runs' depths in words when they differ ('#3 at 4K'), and the depths they share."""

    by_run: dict[int, Depth | None]
    differ: list[str]
    matched: list[MatchedDepth]


def depth_comparison(runs: Sequence[Run], baseline: Run | None) -> DepthComparison:
    """Return ``runs``' headline depths, whether they differ, and their matched depths against ``baseline``."""
    by_run = {run.pk: headline_depth(run) for run in runs}
    differ = depths_differ(list(by_run.values()))
    return DepthComparison(
        by_run=by_run,
        differ=[f"#{pk} at {d.label}" for pk, d in by_run.items() if d is not None] if differ else [],
        matched=matching_depths(runs, baseline) if baseline is not None else [],
    )

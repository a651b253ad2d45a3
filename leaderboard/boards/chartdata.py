"""Runs (loaded with their samples and sweep points) turned into the plain
data charts/ draws: the one place that knows both the models and the charts."""

from __future__ import annotations

from collections.abc import Sequence

from leaderboard.boards.charts.distributions import DistributionSeries
from leaderboard.boards.charts.labels import ctx_tokens_from_label
from leaderboard.boards.charts.repetitions import RepetitionData
from leaderboard.boards.charts.sweep import SweepPointData, SweepSeries
from leaderboard.boards.rows import run_label
from leaderboard.results.models import Run


def sweep_series(run: Run) -> SweepSeries:
    """Return the run's prefetched sweep points as one chart series. A point
    printed only as a label ('198K') is placed at the count its label stands for,
    so it is drawn in every pane; its label still names it."""
    return SweepSeries(
        label=run_label(run),
        points=[
            SweepPointData(
                ctx_tokens=p.ctx_tokens if p.ctx_tokens is not None else ctx_tokens_from_label(p.ctx_label),
                ctx_label=p.ctx_label,
                prefill_tokens_per_s=p.prefill_tokens_per_s,
                decode_tokens_per_s=p.decode_tokens_per_s,
                ttft_ms=p.ttft_ms,
                power_w=p.power_w,
                tokens_per_kwh=p.tokens_per_kwh,
            )
            for p in run.sweep_points.all()
        ],
    )


def repetitions(run: Run) -> list[RepetitionData]:
    """Return the run's prefetched samples as chart repetitions."""
    return [
        RepetitionData(
            index=s.index,
            decode_tokens_per_s=s.decode_tokens_per_s,
            acceptance_pct=s.acceptance_pct,
            output_ok=s.output_ok,
        )
        for s in run.samples.all()
    ]


def distribution_series(runs: Sequence[Run], samples: Sequence[Sequence[float]]) -> list[DistributionSeries]:
    """Return one distribution per run: its raw decode t/s, or its published mean without samples."""
    return [
        DistributionSeries(label=run_label(run), samples=list(values), published_mean=run.decode_tokens_per_s_mean)
        for run, values in zip(runs, samples, strict=True)
    ]

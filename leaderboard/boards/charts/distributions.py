"""Compared runs' decode t/s side by side: each run's repetitions as a strip."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from leaderboard.boards.charts.palette import color
from leaderboard.core.charts import Figure, base_layout, esc, fmt


def _jitter(i: int, width: float = 0.3) -> float:
    # Deterministic spread (golden-ratio sequence), so the same data draws the same picture.
    return ((i * 0.6180339887) % 1.0 - 0.5) * width


@dataclass(frozen=True)
class DistributionSeries:
    label: str
    samples: Sequence[float]
    published_mean: float | None = None


def _short_label(label: str) -> str:
    # "#12 rig · model · engine spec" → "#12" over the engine: the full label is in the hover.
    head, _, rest = label.partition(" ")
    tail = rest.rsplit(" · ", 1)[-1] if " · " in rest else ""
    return f"{esc(head)}<br>{esc(tail)}" if tail else esc(head)


def distributions_figure(series: Sequence[DistributionSeries]) -> Figure:
    """Return the compared runs' decode t/s side by side: one strip of raw
    repetitions per run, or a diamond at the published mean for a run without
    samples. Up to six runs stay readable: short horizontal tick labels (run
    number and engine), no legend, full labels in the hover. The axis starts at
    zero, so the height between two runs is their ratio, not a magnified gap."""
    data: list[dict[str, Any]] = []
    for i, s in enumerate(series):
        name = esc(s.label)
        if s.samples:
            data.append(
                {
                    "type": "scatter",
                    "mode": "markers",
                    "name": name,
                    "x": [i + _jitter(j) for j in range(len(s.samples))],
                    "y": list(s.samples),
                    "marker": {"color": color(i), "size": 8, "opacity": 0.8},
                    "hovertext": [f"{name}<br>repetition {j + 1}: {fmt(v, 2)} t/s" for j, v in enumerate(s.samples)],
                    "hoverinfo": "text",
                }
            )
        elif s.published_mean is not None:
            data.append(
                {
                    "type": "scatter",
                    "mode": "markers",
                    "name": f"{name} (published mean)",
                    "x": [i],
                    "y": [s.published_mean],
                    "marker": {"color": color(i), "size": 14, "symbol": "diamond"},
                    "hovertext": [f"{name}<br>published mean: {fmt(s.published_mean, 2)} t/s<br>no raw samples"],
                    "hoverinfo": "text",
                }
            )
    layout = base_layout(
        height=360,
        showlegend=False,
        xaxis={
            "tickmode": "array",
            "tickvals": list(range(len(series))),
            "ticktext": [_short_label(s.label) for s in series],
            "tickangle": 0,
            "range": [-0.5, len(series) - 0.5],
            "zeroline": False,
            "showgrid": False,
            "automargin": True,
        },
        # From zero: an axis from 42 to 46 draws a 9% gap as most of the chart's height.
        yaxis={"title": {"text": "decode t/s"}, "rangemode": "tozero"},
    )
    return {"data": data, "layout": layout}

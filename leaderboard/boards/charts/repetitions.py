"""A run's repetitions: decode t/s per repetition (a strip with the mean) and
draft acceptance per repetition."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from leaderboard.boards.charts.palette import color
from leaderboard.core.charts import Figure, base_layout, esc, fmt


@dataclass(frozen=True)
class RepetitionData:
    index: int
    decode_tokens_per_s: float | None
    acceptance_pct: float | None = None
    output_ok: bool | None = None


def repetitions_figure(label: str, reps: Sequence[RepetitionData], *, mean: float | None = None) -> Figure:
    """Return a strip plot of decode t/s per repetition with the mean as a line;
    failed output checks are drawn as crosses."""
    shown = [r for r in reps if r.decode_tokens_per_s is not None]
    data: list[dict[str, Any]] = [
        {
            "type": "scatter",
            "mode": "markers",
            "name": esc(label),
            "x": [r.index for r in shown],
            "y": [r.decode_tokens_per_s for r in shown],
            "marker": {
                "size": 10,
                "color": [color(1) if r.output_ok is False else color(0) for r in shown],
                "symbol": ["x" if r.output_ok is False else "circle" for r in shown],
            },
            "hovertext": [
                f"repetition {r.index}<br>decode: {fmt(r.decode_tokens_per_s, 2)} t/s"
                + (f"<br>accept: {fmt(r.acceptance_pct)} %" if r.acceptance_pct is not None else "")
                + ("<br>output check failed" if r.output_ok is False else "")
                for r in shown
            ],
            "hoverinfo": "text",
        }
    ]
    if mean is not None and shown:
        data.append(
            {
                "type": "scatter",
                "mode": "lines",
                "name": "mean",
                "x": [min(r.index for r in shown), max(r.index for r in shown)],
                "y": [mean, mean],
                "line": {"dash": "dash", "color": "#555"},
                "hovertext": [f"mean: {fmt(mean, 2)} t/s"] * 2,
                "hoverinfo": "text",
            }
        )
    layout = base_layout(
        height=300,
        xaxis={"title": {"text": "repetition"}, "dtick": 1},
        yaxis={"title": {"text": "decode t/s"}},
        showlegend=False,
    )
    return {"data": data, "layout": layout}


def acceptance_figure(reps: Sequence[RepetitionData]) -> Figure:
    """Return draft acceptance % per repetition as bars; no traces without drafts."""
    shown = [r for r in reps if r.acceptance_pct is not None]
    data = []
    if shown:
        data.append(
            {
                "type": "bar",
                "name": "accept %",
                "x": [r.index for r in shown],
                "y": [r.acceptance_pct for r in shown],
                "marker": {"color": color(2)},
                "hovertext": [f"repetition {r.index}<br>accept: {fmt(r.acceptance_pct)} %" for r in shown],
                "hoverinfo": "text",
            }
        )
    layout = base_layout(
        height=260,
        xaxis={"title": {"text": "repetition"}, "dtick": 1},
        yaxis={"title": {"text": "accept %"}, "range": [0, 100]},
        showlegend=False,
    )
    return {"data": data, "layout": layout}

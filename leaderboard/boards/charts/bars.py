"""A ranking as horizontal bars (seed 004's leaderboard as a picture)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from leaderboard.boards.charts.palette import color
from leaderboard.core.charts import Figure, base_layout, esc, fmt


@dataclass(frozen=True)
class BarItem:
    label: str
    value: float | None
    error: float | None = None
    detail: str = ""
    unit: str = "t/s"
    # The value as printed ("249.30"), for the hover; else two decimals.
    shown: str = ""


def bar_figure(items: Sequence[BarItem], *, axis_title: str = "decode t/s") -> Figure:
    """Return a horizontal bar chart, first item on top, with ±error bars where
    given (seed 004's leaderboard as a picture). Items without a value are left out."""
    shown = [item for item in items if item.value is not None]
    labels = [f"{i + 1}. {esc(item.label)}" for i, item in enumerate(shown)]
    data = []
    if shown:
        bar: dict[str, Any] = {
            "type": "bar",
            "orientation": "h",
            "x": [item.value for item in shown],
            "y": labels,
            "marker": {"color": [color(i) for i in range(len(shown))]},
            "hovertext": [
                f"{esc(item.label)}<br>{esc(item.shown) or fmt(item.value, 2)} {item.unit}"
                + (f" ± {fmt(item.error, 2)} {item.unit} (σ)" if item.error is not None else "")
                + (f"<br>{esc(item.detail)}" if item.detail else "")
                for item in shown
            ],
            "hoverinfo": "text",
        }
        if any(item.error is not None for item in shown):
            bar["error_x"] = {"type": "data", "array": [item.error or 0 for item in shown], "visible": True}
        data.append(bar)
    layout = base_layout(
        height=max(220, 40 * len(shown) + 90),
        xaxis={"title": {"text": axis_title}, "rangemode": "tozero"},
        yaxis={"autorange": "reversed", "automargin": True},
        showlegend=False,
        margin={"l": 10, "r": 20, "t": 20, "b": 50},
    )
    return {"data": data, "layout": layout}

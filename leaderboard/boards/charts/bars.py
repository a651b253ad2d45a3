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
    # What tells bars apart beyond their label (the workload they were measured on): one
    # colour and legend entry per group; '' for a chart of one kind of figure.
    group: str = ""


def _short_names(groups: Sequence[str]) -> dict[str, str]:
    """Return each group's name for a legend and a label: a community set's workload
    without its set ("XiongjieDai/GPU-Benchmarks-on-LLM-Inference: llama-bench tg512 v1"
    → "llama-bench tg512 v1", the hover keeps it whole), unless two would then read alike."""
    short = {group: group.rsplit(": ", 1)[-1] for group in groups}
    if len(set(short.values())) < len(short):
        return {group: group for group in groups}
    return short


def bar_figure(items: Sequence[BarItem], *, axis_title: str = "decode t/s") -> Figure:
    """Return a horizontal bar chart, first item on top, with ±error bars where
    given (seed 004's leaderboard as a picture). Items without a value are left out.

    Bars are one colour; with several ``group`` values, each group has its colour and
    a legend entry, and a label ends with its group (two bars of one stack on two
    workloads would otherwise read alike)."""
    shown = [item for item in items if item.value is not None]
    groups = list(dict.fromkeys(item.group for item in shown))
    mixed = len(groups) > 1
    short = _short_names(groups)
    labels = [
        f"{i + 1}. {esc(item.label)}" + (f" · {esc(short[item.group])}" if mixed else "")
        for i, item in enumerate(shown)
    ]
    data = []
    for g, group in enumerate(groups):
        members = [i for i, item in enumerate(shown) if item.group == group]
        bar: dict[str, Any] = {
            "type": "bar",
            "orientation": "h",
            "name": esc(short[group]) if mixed else "",
            "x": [shown[i].value for i in members],
            "y": [labels[i] for i in members],
            "marker": {"color": color(g)},
            "hovertext": [
                f"{esc(shown[i].label)}<br>{esc(shown[i].shown) or fmt(shown[i].value, 2)} {shown[i].unit}"
                + (f" ± {fmt(shown[i].error, 2)} {shown[i].unit} (σ)" if shown[i].error is not None else "")
                + (f"<br>{esc(shown[i].detail)}" if shown[i].detail else "")
                + (f"<br>workload: {esc(group)}" if mixed else "")
                for i in members
            ],
            "hoverinfo": "text",
        }
        if any(shown[i].error is not None for i in members):
            bar["error_x"] = {"type": "data", "array": [shown[i].error or 0 for i in members], "visible": True}
        data.append(bar)
    layout = base_layout(
        height=max(220, 40 * len(shown) + 90 + (30 * len(groups) if mixed else 0)),
        xaxis={"title": {"text": axis_title}, "rangemode": "tozero"},
        # The ranking's order whatever the group: the categories in rank order, first on top.
        yaxis={"autorange": "reversed", "automargin": True, "categoryorder": "array", "categoryarray": labels},
        showlegend=mixed,
        # Below the axis, at the foot of the figure: the toolbar takes the top right.
        legend={
            "orientation": "h",
            "x": 0,
            "xanchor": "left",
            "y": 0,
            "yref": "container",
            "yanchor": "bottom",
            "title": {"text": "workload"},
        },  # fmt: skip
        margin={"l": 10, "r": 20, "t": 20, "b": 50 + (30 * len(groups) if mixed else 0)},
    )
    return {"data": data, "layout": layout}

"""A tuning journey (seed 003's phases) as a line through its steps."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from leaderboard.boards.charts.palette import color
from leaderboard.core.charts import Figure, base_layout, esc, fmt


@dataclass(frozen=True)
class StepData:
    label: str
    value: float | None
    detail: str = ""
    # The value as printed ("29.899"), for the hover; else two decimals.
    shown: str = ""


def steps_figure(
    steps: Sequence[StepData],
    *,
    side_tests: Sequence[StepData] = (),
    axis_title: str = "decode t/s",
    unit: str = "t/s",
) -> Figure:
    """Return a tuning journey (seed 003's phases) as a line through each step's
    figure, in order, ticked by the step's short name ("Phase 10"; the hover has the
    whole label, which ran out of the chart at any width); side tests (no phase) as
    separate markers after it, not joined to the line, so none reads as the
    journey's final phase."""
    shown = [s for s in steps if s.value is not None]
    side = [s for s in side_tests if s.value is not None]
    data = []
    if shown:
        data.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "x": list(range(1, len(shown) + 1)),
                "y": [s.value for s in shown],
                "line": {"color": color(0)},
                "hovertext": [
                    f"{esc(s.label)}<br>{esc(s.shown) or fmt(s.value, 2)} {unit}"
                    + (f"<br>{esc(s.detail)}" if s.detail else "")
                    for s in shown
                ],
                "hoverinfo": "text",
            }
        )
    layout = base_layout(
        height=320,
        xaxis={
            "tickmode": "array",
            "tickvals": list(range(1, len(shown) + 1)),
            "ticktext": [esc(_step_tick(s.label)) for s in shown],
            "automargin": True,
        },
        yaxis={"title": {"text": axis_title}, "rangemode": "tozero"},
        showlegend=bool(side),
        # Above the plot: the step names are long and rotate into the space below.
        legend={"orientation": "h", "y": 1.02, "yanchor": "bottom", "x": 0},
    )
    if data:
        data[0]["name"] = "phases"
    if side:
        first = len(shown) + 1
        data.append(
            {
                "type": "scatter",
                "mode": "markers",
                "name": "side test (not a phase)",
                "x": list(range(first, first + len(side))),
                "y": [s.value for s in side],
                "marker": {"color": color(1), "size": 11, "symbol": "x"},
                "hovertext": [
                    f"side test: {esc(s.label)}<br>{esc(s.shown) or fmt(s.value, 2)} {unit}"
                    + (f"<br>{esc(s.detail)}" if s.detail else "")
                    for s in side
                ],
                "hoverinfo": "text",
            }
        )
        layout["xaxis"]["tickvals"] = list(range(1, first + len(side)))
        layout["xaxis"]["ticktext"] = [*layout["xaxis"]["ticktext"], *[f"({esc(_step_tick(s.label))})" for s in side]]
    return {"data": data, "layout": layout}


def _step_tick(label: str, chars: int = 18) -> str:
    """Return a step's tick label: "Phase 10" of "Phase 10: The n_gpu=17 Breakthrough",
    else the label cut to ``chars``."""
    head = label.split(":", 1)[0].strip()
    return head if len(head) <= chars else head[: chars - 1] + "…"

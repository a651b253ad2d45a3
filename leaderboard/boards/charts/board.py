"""The leaderboard page as a picture: decode t/s against a second figure, one
colour per engine, or as bars when too few rows have one."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from leaderboard.boards.charts.palette import color
from leaderboard.core.charts import Figure, base_layout, esc, fmt


@dataclass(frozen=True)
class _BoardAxis:
    title: str
    unit: str
    value: Callable[[Any], float | None]


BOARD_AXES = {
    "tpkwh": _BoardAxis("tokens/kWh", "tokens/kWh", lambda row: row.tokens_per_kwh),
    "vram": _BoardAxis("peak VRAM GiB", "GiB", lambda row: row.vram_peak_mib / 1024 if row.vram_peak_mib else None),
    "power": _BoardAxis("power W", "W", lambda row: row.power_w_mean),
}


def _run_hover(r: Any) -> str:
    """Return a leaderboard row's hover lines: run, rig, model file and decode speed."""
    return (
        f"#{r.run_id} {esc(r.rig)}<br>{esc(r.model)} {esc(r.quantization)}"
        f"<br>decode: {fmt(r.decode_tokens_per_s_mean, 2)} t/s"
    )


def board_scatter_figure(rows: Sequence[Any]) -> Figure:
    """Return the leaderboard page as a picture: decode t/s against tokens/kWh,
    peak VRAM or power (whichever most rows have), one colour per engine; rows
    without that figure are left out. When fewer than three rows have any of
    them, decode t/s per run as bars, still coloured by engine."""
    counts = {key: sum(1 for r in rows if a.value(r) is not None) for key, a in BOARD_AXES.items()}
    best = max(counts, key=lambda key: counts[key]) if counts else None
    if best is None or counts[best] < 3:
        return _board_bars(rows)
    axis = BOARD_AXES[best]
    data: list[dict[str, Any]] = []
    if axis is not None:
        engines = list(dict.fromkeys(r.engine for r in rows))
        for i, engine in enumerate(engines):
            shown = [r for r in rows if r.engine == engine and axis.value(r) is not None and r.decode_tokens_per_s_mean]
            if not shown:
                continue
            data.append(
                {
                    "type": "scatter",
                    "mode": "markers",
                    "name": esc(engine),
                    "x": [axis.value(r) for r in shown],
                    "y": [r.decode_tokens_per_s_mean for r in shown],
                    "marker": {"color": color(i), "size": 10, "opacity": 0.85},
                    "hovertext": [
                        f"{_run_hover(r)}<br>{axis.title}: {fmt(axis.value(r), 1)} {axis.unit}" for r in shown
                    ],
                    "hoverinfo": "text",
                }
            )
    layout = base_layout(
        height=380,
        xaxis={"title": {"text": axis.title if axis else ""}, "rangemode": "tozero", "automargin": True},
        yaxis={"title": {"text": "decode t/s"}, "rangemode": "tozero"},
        legend={"orientation": "h", "y": -0.25, "title": {"text": "engine"}},
    )
    return {"data": data, "layout": layout}


def _board_bars(rows: Sequence[Any]) -> Figure:
    shown = [r for r in rows if r.decode_tokens_per_s_mean is not None][:30]
    engines = list(dict.fromkeys(r.engine for r in shown))
    data = []
    for i, engine in enumerate(engines):
        mine = [r for r in shown if r.engine == engine]
        data.append(
            {
                "type": "bar",
                "orientation": "h",
                "name": esc(engine),
                "x": [r.decode_tokens_per_s_mean for r in mine],
                "y": [f"#{r.run_id} {esc(r.model)}" for r in mine],
                "marker": {"color": color(i)},
                "hovertext": [_run_hover(r) for r in mine],
                "hoverinfo": "text",
            }
        )
    layout = base_layout(
        height=max(240, 24 * len(shown) + 110),
        xaxis={"title": {"text": "decode t/s"}, "rangemode": "tozero"},
        yaxis={
            "autorange": "reversed",
            "automargin": True,
            "categoryorder": "array",
            "categoryarray": [f"#{r.run_id} {esc(r.model)}" for r in shown],
        },
        legend={"orientation": "h", "y": -0.15, "title": {"text": "engine"}},
        margin={"l": 10, "r": 20, "t": 20, "b": 60},
    )
    return {"data": data, "layout": layout}

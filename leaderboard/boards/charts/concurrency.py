"""The concurrency figure: pure, from plain data to a Plotly dict.

Four panes against the number of concurrent streams: aggregate output t/s,
per-stream decode t/s (mean, with the p50-p90 spread in the hover), TTFT p90
and J per output token. Several runs overlay, one colour each. With a floor
(t/s a stream must keep), the per-stream pane draws it as a dashed line and
marks, per run, the first level whose per-stream mean falls below it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from leaderboard.boards.charts.palette import color
from leaderboard.core.charts import Figure, esc, fmt, legend_key, pane_grid


@dataclass(frozen=True)
class LevelData:
    concurrency: int
    output_tokens_per_s: float | None = None
    decode_tokens_per_s_mean: float | None = None
    decode_tokens_per_s_p50: float | None = None
    decode_tokens_per_s_p90: float | None = None
    ttft_ms_p90: float | None = None
    energy_j_per_token: float | None = None


@dataclass(frozen=True)
class ConcurrencySeries:
    label: str
    levels: Sequence[LevelData] = field(default_factory=list)


@dataclass(frozen=True)
class _Pane:
    key: str
    title: str
    y_title: str
    y: Callable[[LevelData], float | None]
    unit: str
    digits: int = 1


# Aggregate and per-stream differ even at 1 stream: the aggregate is output tokens over
# the level's wall time (each request's prefill and time to first token included), the
# per-stream figure each request's decode speed after its first token.
PANES = (
    _Pane("aggregate", "Aggregate output t/s (over wall time)", "aggregate t/s", lambda lv: lv.output_tokens_per_s,
          "t/s"),
    _Pane("per_stream", "Per-stream decode t/s (after first token)", "per-stream decode t/s",
          lambda lv: lv.decode_tokens_per_s_mean, "t/s"),
    _Pane("ttft", "TTFT p90", "TTFT p90 ms", lambda lv: lv.ttft_ms_p90, "ms", 0),
    _Pane("energy", "Energy per output token", "J/token", lambda lv: lv.energy_j_per_token, "J/token", 3),
)  # fmt: skip


def first_below(levels: Sequence[LevelData], floor: float) -> LevelData | None:
    """Return the lowest level whose per-stream mean decode t/s is below ``floor``; None if none is."""
    for level in sorted(levels, key=lambda lv: lv.concurrency):
        if level.decode_tokens_per_s_mean is not None and level.decode_tokens_per_s_mean < floor:
            return level
    return None


def _hover(series: ConcurrencySeries, pane: _Pane, level: LevelData) -> str:
    value = fmt(pane.y(level), pane.digits)
    text = f"{esc(series.label)}<br>{level.concurrency} streams<br>{pane.y_title}: {value} {pane.unit}"
    if pane.key == "per_stream":
        text += f"<br>p50 {fmt(level.decode_tokens_per_s_p50)} t/s, p90 {fmt(level.decode_tokens_per_s_p90)} t/s"
    return text


def concurrency_figure(series: Sequence[ConcurrencySeries], *, floor: float | None = None, columns: int = 2) -> Figure:
    """Return the concurrency figure for one or more runs overlaid. A pane no run
    has data for is left out (J/token without NVML); no data at all: no traces."""
    all_levels = [lv for s in series for lv in s.levels]
    panes = [p for p in PANES if any(p.y(lv) is not None for lv in all_levels)]
    ticks = sorted({lv.concurrency for lv in all_levels})
    titles = [
        f"<b>{pane.title}</b>"
        + (f" (floor {fmt(floor)} t/s)" if floor is not None and pane.key == "per_stream" else "")
        for pane in panes
    ]
    layout, suffixes = pane_grid(
        [
            (
                title,
                {
                    "title": {"text": "concurrent streams"},
                    "type": "log",
                    "tickmode": "array",
                    "tickvals": ticks,
                    "ticktext": [str(t) for t in ticks],
                },
                {"title": {"text": pane.y_title}, "rangemode": "tozero"},
            )
            for title, pane in zip(titles, panes, strict=True)
        ],
        columns=columns,
        shapes=[],
    )
    data: list[dict[str, Any]] = []
    if panes:
        # The legend names each run once (a key with no points, its colour); every
        # pane's line is named for its run and its figure, so no two traces share a name.
        data += [legend_key(esc(s.label), group=f"s{i}", color=color(i)) for i, s in enumerate(series)]
    for pane, suffix in zip(panes, suffixes, strict=True):
        for s_index, s in enumerate(series):
            # A level without this pane's figure is a gap in the line, not a line drawn across it.
            levels = sorted(s.levels, key=lambda lv: lv.concurrency)
            data.append(
                {
                    "type": "scatter",
                    "mode": "lines+markers",
                    "name": f"{esc(s.label)}: {pane.y_title}",
                    "legendgroup": f"s{s_index}",
                    "showlegend": False,
                    "x": [lv.concurrency for lv in levels],
                    "y": [pane.y(lv) for lv in levels],
                    "connectgaps": False,
                    "hovertext": [_hover(s, pane, lv) for lv in levels],
                    "hoverinfo": "text",
                    "line": {"color": color(s_index)},
                    "xaxis": f"x{suffix}",
                    "yaxis": f"y{suffix}",
                    "meta": {"pane": pane.key},
                }
            )
            below = first_below(s.levels, floor) if floor is not None and pane.key == "per_stream" else None
            if below is not None:
                data.append(
                    {
                        "type": "scatter",
                        "mode": "markers",
                        "name": f"{esc(s.label)}: below {fmt(floor)} t/s",
                        "legendgroup": f"s{s_index}",
                        "showlegend": False,
                        "x": [below.concurrency],
                        "y": [below.decode_tokens_per_s_mean],
                        "hovertext": [
                            f"{esc(s.label)}<br>below {fmt(floor)} t/s per stream from {below.concurrency} streams"
                        ],
                        "hoverinfo": "text",
                        "marker": {"symbol": "x", "size": 14, "color": color(s_index), "line": {"width": 2}},
                        "xaxis": f"x{suffix}",
                        "yaxis": f"y{suffix}",
                        "meta": {"pane": pane.key, "below_floor": below.concurrency},
                    }
                )
        if floor is not None and pane.key == "per_stream":
            layout["shapes"].append(
                {
                    "type": "line",
                    "xref": f"x{suffix} domain",
                    "yref": f"y{suffix}",
                    "x0": 0,
                    "x1": 1,
                    "y0": floor,
                    "y1": floor,
                    "line": {"dash": "dash", "color": "#555", "width": 1},
                }
            )
    return {"data": data, "layout": layout}

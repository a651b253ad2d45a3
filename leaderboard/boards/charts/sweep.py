"""Seed 001's context-sweep figure: prefill, decode, TTFT, power and tokens/kWh
against context, and tokens/kWh against power."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from leaderboard.boards.charts.labels import ctx_label
from leaderboard.boards.charts.palette import color
from leaderboard.core.charts import Figure, esc, fmt, legend_key, pane_grid


@dataclass(frozen=True)
class SweepPointData:
    ctx_tokens: int | None
    ctx_label: str = ""
    prefill_tokens_per_s: float | None = None
    decode_tokens_per_s: float | None = None
    ttft_ms: float | None = None
    power_w: float | None = None
    tokens_per_kwh: float | None = None


@dataclass(frozen=True)
class SweepSeries:
    label: str
    points: Sequence[SweepPointData] = field(default_factory=list)


@dataclass(frozen=True)
class _Pane:
    title: str
    x_title: str
    y_title: str
    x: Callable[[SweepPointData], float | None]
    y: Callable[[SweepPointData], float | None]
    y_unit: str
    x_log: bool = True
    x_unit: str = "tokens of context"
    # Decimals in the hover: enough that the values of a pane differ (0.057 t/s per W, not 0.1).
    digits: int = 1


def _per_watt(p: SweepPointData) -> float | None:
    if p.decode_tokens_per_s is None or not p.power_w:
        return None
    return p.decode_tokens_per_s / p.power_w


# Seed 001's panes, under its own names ("efficiency vs context", "power range").
SWEEP_PANES = (
    _Pane("Prefill vs context", "context (tokens)", "prefill t/s", lambda p: p.ctx_tokens,
          lambda p: p.prefill_tokens_per_s, "t/s"),
    _Pane("Decode vs context", "context (tokens)", "decode t/s", lambda p: p.ctx_tokens,
          lambda p: p.decode_tokens_per_s, "t/s"),
    _Pane("TTFT vs context", "context (tokens)", "TTFT ms", lambda p: p.ctx_tokens, lambda p: p.ttft_ms, "ms",
          digits=0),
    _Pane("Power range vs context", "context (tokens)", "power W", lambda p: p.ctx_tokens, lambda p: p.power_w, "W",
          digits=0),
    _Pane("Efficiency vs context", "context (tokens)", "decode t/s per W", lambda p: p.ctx_tokens, _per_watt,
          "t/s per W", digits=3),
    _Pane("Energy efficiency vs context", "context (tokens)", "tokens/kWh", lambda p: p.ctx_tokens,
          lambda p: p.tokens_per_kwh, "tokens/kWh", digits=0),
    _Pane("Efficiency vs power", "power W", "tokens/kWh", lambda p: p.power_w, lambda p: p.tokens_per_kwh,
          "tokens/kWh", x_log=False, x_unit="W", digits=0),
)  # fmt: skip


def sweep_figure(series: Sequence[SweepSeries], *, columns: int = 2) -> Figure:
    """Return the multi-pane context-sweep figure of seed 001 for one or more
    runs overlaid: prefill, decode, TTFT, power and tokens/kWh against context
    (log axis) and tokens/kWh against power. A pane no series has data for is
    left out; with no data at all the figure has no traces."""
    points = [pt for s in series for pt in s.points]
    panes = [p for p in SWEEP_PANES if any(p.x(pt) is not None and p.y(pt) is not None for pt in points)]
    ticks = sorted({(pt.ctx_tokens, pt.ctx_label or ctx_label(pt.ctx_tokens)) for pt in points if pt.ctx_tokens})
    ticks = [t for i, t in enumerate(ticks) if i == 0 or t[0] != ticks[i - 1][0]]
    axes = []
    for pane in panes:
        x_axis: dict[str, Any] = {"title": {"text": pane.x_title}, "type": "log" if pane.x_log else "linear"}
        if pane.x_log:
            # Ticks at the measured depths, labelled as people write them (4K, 128K).
            x_axis.update(tickmode="array", tickvals=[t for t, _ in ticks], ticktext=[esc(label) for _, label in ticks])
        axes.append((f"<b>{pane.title}</b>", x_axis, {"title": {"text": pane.y_title}, "rangemode": "tozero"}))
    layout, suffixes = pane_grid(axes, columns=columns)
    data: list[dict[str, Any]] = []
    if panes:
        data += [legend_key(esc(s.label), group=f"s{i}", color=color(i)) for i, s in enumerate(series)]
    for pane, suffix in zip(panes, suffixes, strict=True):
        for s_index, s in enumerate(series):
            # A depth without this pane's figure is a gap in the line (None, connectgaps off), not a
            # line drawn across it; against power, a point needs both.
            pts = [pt for pt in s.points if pane.x(pt) is not None and (pane.x_log or pane.y(pt) is not None)]
            hover = [
                f"{esc(s.label)}<br>{esc(pt.ctx_label or pt.ctx_tokens or '?')} context"
                f"<br>{pane.y_title}: {fmt(pane.y(pt), pane.digits)} {pane.y_unit}"
                + (f"<br>power: {fmt(pt.power_w, 0)} W" if pane.x_unit == "W" else "")
                for pt in pts
            ]
            data.append(
                {
                    "type": "scatter",
                    # Against power the points are not ordered along x: markers only.
                    "mode": "lines+markers" if pane.x_log else "markers",
                    "name": f"{esc(s.label)}: {pane.title}",
                    "legendgroup": f"s{s_index}",
                    "showlegend": False,
                    "x": [pane.x(pt) for pt in pts],
                    "y": [pane.y(pt) for pt in pts],
                    "connectgaps": False,
                    "hovertext": hover,
                    "hoverinfo": "text",
                    "line": {"color": color(s_index)},
                    "xaxis": f"x{suffix}",
                    "yaxis": f"y{suffix}",
                }
            )
    return {"data": data, "layout": layout}

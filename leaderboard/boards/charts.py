"""Plotly figures as plain dicts: pure functions from plain data to
``{"data": [...], "layout": {...}}``, serialised into the page with
``json_script`` and drawn by the vendored plotly.js basic bundle (scatter and bar).

Plotly renders trace names, hover text and category labels as a subset of
HTML, so every user-provided string is escaped here (``_esc``) before it enters
a figure. Every hover text names its unit.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from leaderboard.core.charts import base_layout as _base_layout
from leaderboard.core.charts import esc as _esc
from leaderboard.core.charts import pane_grid

PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf")
Figure = dict[str, Any]


def _fmt(value: float | None, digits: int = 1) -> str:
    if value is None:
        return "–"
    if abs(value) >= 10_000:
        return f"{value:,.0f}"
    return f"{value:,.{digits}f}"


def _color(i: int) -> str:
    return PALETTE[i % len(PALETTE)]


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
    _Pane("TTFT vs context", "context (tokens)", "TTFT ms", lambda p: p.ctx_tokens, lambda p: p.ttft_ms, "ms"),
    _Pane("Power range vs context", "context (tokens)", "power W", lambda p: p.ctx_tokens, lambda p: p.power_w, "W"),
    _Pane("Efficiency vs context", "context (tokens)", "decode t/s per W", lambda p: p.ctx_tokens, _per_watt,
          "t/s per W"),
    _Pane("Energy efficiency vs context", "context (tokens)", "tokens/kWh", lambda p: p.ctx_tokens,
          lambda p: p.tokens_per_kwh, "tokens/kWh"),
    _Pane("Efficiency vs power", "power W", "tokens/kWh", lambda p: p.power_w, lambda p: p.tokens_per_kwh,
          "tokens/kWh", x_log=False, x_unit="W"),
)  # fmt: skip


def ctx_tokens_from_label(label: str) -> int | None:
    """Return the token count a printed context label stands for ('198K' → 198 × 1024,
    as the articles' 4K…128K are); None when the label is not of that form."""
    text = (label or "").strip().upper()
    multiplier = 1
    if text.endswith("K"):
        text, multiplier = text[:-1], 1024
    elif text.endswith("M"):
        text, multiplier = text[:-1], 1024 * 1024
    try:
        value = float(text)
    except ValueError:
        return None
    return round(value * multiplier) if value > 0 else None


def _ctx_label(tokens: int) -> str:
    return f"{tokens // 1024}K" if tokens >= 1024 and tokens % 1024 == 0 else str(tokens)


def sweep_figure(series: Sequence[SweepSeries], *, columns: int = 2) -> Figure:
    """Return the multi-pane context-sweep figure of seed 001 for one or more
    runs overlaid: prefill, decode, TTFT, power and tokens/kWh against context
    (log axis) and tokens/kWh against power. A pane no series has data for is
    left out; with no data at all the figure has no traces."""
    points = [pt for s in series for pt in s.points]
    panes = [p for p in SWEEP_PANES if any(p.x(pt) is not None and p.y(pt) is not None for pt in points)]
    ticks = sorted({(pt.ctx_tokens, pt.ctx_label or _ctx_label(pt.ctx_tokens)) for pt in points if pt.ctx_tokens})
    ticks = [t for i, t in enumerate(ticks) if i == 0 or t[0] != ticks[i - 1][0]]
    axes = []
    for pane in panes:
        x_axis: dict[str, Any] = {"title": {"text": pane.x_title}, "type": "log" if pane.x_log else "linear"}
        if pane.x_log:
            # Ticks at the measured depths, labelled as people write them (4K, 128K).
            x_axis.update(
                tickmode="array", tickvals=[t for t, _ in ticks], ticktext=[_esc(label) for _, label in ticks]
            )
        axes.append((f"<b>{pane.title}</b>", x_axis, {"title": {"text": pane.y_title}, "rangemode": "tozero"}))
    layout, suffixes = pane_grid(axes, columns=columns)
    data: list[dict[str, Any]] = []
    for i, (pane, suffix) in enumerate(zip(panes, suffixes, strict=True), start=1):
        for s_index, s in enumerate(series):
            pts = [pt for pt in s.points if pane.x(pt) is not None and pane.y(pt) is not None]
            hover = [
                f"{_esc(s.label)}<br>{_esc(pt.ctx_label or pt.ctx_tokens or '?')} context"
                f"<br>{pane.y_title}: {_fmt(pane.y(pt))} {pane.y_unit}"
                + (f"<br>power: {_fmt(pt.power_w, 0)} W" if pane.x_unit == "W" else "")
                for pt in pts
            ]
            data.append(
                {
                    "type": "scatter",
                    # Against power the points are not ordered along x: markers only.
                    "mode": "lines+markers" if pane.x_log else "markers",
                    "name": _esc(s.label),
                    "legendgroup": f"s{s_index}",
                    "showlegend": i == 1,
                    "x": [pane.x(pt) for pt in pts],
                    "y": [pane.y(pt) for pt in pts],
                    "hovertext": hover,
                    "hoverinfo": "text",
                    "line": {"color": _color(s_index)},
                    "xaxis": f"x{suffix}",
                    "yaxis": f"y{suffix}",
                }
            )
    return {"data": data, "layout": layout}


def _jitter(i: int, width: float = 0.3) -> float:
    # Deterministic spread (golden-ratio sequence), so the same data draws the same picture.
    return ((i * 0.6180339887) % 1.0 - 0.5) * width


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
            "name": _esc(label),
            "x": [r.index for r in shown],
            "y": [r.decode_tokens_per_s for r in shown],
            "marker": {
                "size": 10,
                "color": [_color(1) if r.output_ok is False else _color(0) for r in shown],
                "symbol": ["x" if r.output_ok is False else "circle" for r in shown],
            },
            "hovertext": [
                f"repetition {r.index}<br>decode: {_fmt(r.decode_tokens_per_s, 2)} t/s"
                + (f"<br>accept: {_fmt(r.acceptance_pct)} %" if r.acceptance_pct is not None else "")
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
                "hovertext": [f"mean: {_fmt(mean, 2)} t/s"] * 2,
                "hoverinfo": "text",
            }
        )
    layout = _base_layout(
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
                "marker": {"color": _color(2)},
                "hovertext": [f"repetition {r.index}<br>accept: {_fmt(r.acceptance_pct)} %" for r in shown],
                "hoverinfo": "text",
            }
        )
    layout = _base_layout(
        height=260,
        xaxis={"title": {"text": "repetition"}, "dtick": 1},
        yaxis={"title": {"text": "accept %"}, "range": [0, 100]},
        showlegend=False,
    )
    return {"data": data, "layout": layout}


@dataclass(frozen=True)
class BarItem:
    label: str
    value: float | None
    error: float | None = None
    detail: str = ""
    unit: str = "t/s"


def bar_figure(items: Sequence[BarItem], *, axis_title: str = "decode t/s") -> Figure:
    """Return a horizontal bar chart, first item on top, with ±error bars where
    given (seed 004's leaderboard as a picture). Items without a value are left out."""
    shown = [item for item in items if item.value is not None]
    labels = [f"{i + 1}. {_esc(item.label)}" for i, item in enumerate(shown)]
    data = []
    if shown:
        bar: dict[str, Any] = {
            "type": "bar",
            "orientation": "h",
            "x": [item.value for item in shown],
            "y": labels,
            "marker": {"color": [_color(i) for i in range(len(shown))]},
            "hovertext": [
                f"{_esc(item.label)}<br>{_fmt(item.value, 2)} {item.unit}"
                + (f" ± {_fmt(item.error, 2)} {item.unit} (σ)" if item.error is not None else "")
                + (f"<br>{_esc(item.detail)}" if item.detail else "")
                for item in shown
            ],
            "hoverinfo": "text",
        }
        if any(item.error is not None for item in shown):
            bar["error_x"] = {"type": "data", "array": [item.error or 0 for item in shown], "visible": True}
        data.append(bar)
    layout = _base_layout(
        height=max(220, 40 * len(shown) + 90),
        xaxis={"title": {"text": axis_title}, "rangemode": "tozero"},
        yaxis={"autorange": "reversed", "automargin": True},
        showlegend=False,
        margin={"l": 10, "r": 20, "t": 20, "b": 50},
    )
    return {"data": data, "layout": layout}


@dataclass(frozen=True)
class DistributionSeries:
    label: str
    samples: Sequence[float]
    published_mean: float | None = None


def _short_label(label: str) -> str:
    # "#12 rig · model · engine spec" → "#12" over the engine: the full label is in the hover.
    head, _, rest = label.partition(" ")
    tail = rest.rsplit(" · ", 1)[-1] if " · " in rest else ""
    return f"{_esc(head)}<br>{_esc(tail)}" if tail else _esc(head)


def distributions_figure(series: Sequence[DistributionSeries]) -> Figure:
    """Return the compared runs' decode t/s side by side: one strip of raw
    repetitions per run, or a diamond at the published mean for a run without
    samples. Up to six runs stay readable: short horizontal tick labels (run
    number and engine), no legend, full labels in the hover."""
    data: list[dict[str, Any]] = []
    for i, s in enumerate(series):
        name = _esc(s.label)
        if s.samples:
            data.append(
                {
                    "type": "scatter",
                    "mode": "markers",
                    "name": name,
                    "x": [i + _jitter(j) for j in range(len(s.samples))],
                    "y": list(s.samples),
                    "marker": {"color": _color(i), "size": 8, "opacity": 0.8},
                    "hovertext": [f"{name}<br>repetition {j + 1}: {_fmt(v, 2)} t/s" for j, v in enumerate(s.samples)],
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
                    "marker": {"color": _color(i), "size": 14, "symbol": "diamond"},
                    "hovertext": [f"{name}<br>published mean: {_fmt(s.published_mean, 2)} t/s<br>no raw samples"],
                    "hoverinfo": "text",
                }
            )
    layout = _base_layout(
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
        yaxis={"title": {"text": "decode t/s"}},
    )
    return {"data": data, "layout": layout}


@dataclass(frozen=True)
class StepData:
    label: str
    value: float | None
    detail: str = ""


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
                "line": {"color": _color(0)},
                "hovertext": [
                    f"{_esc(s.label)}<br>{_fmt(s.value, 2)} {unit}" + (f"<br>{_esc(s.detail)}" if s.detail else "")
                    for s in shown
                ],
                "hoverinfo": "text",
            }
        )
    layout = _base_layout(
        height=320,
        xaxis={
            "tickmode": "array",
            "tickvals": list(range(1, len(shown) + 1)),
            "ticktext": [_esc(_step_tick(s.label)) for s in shown],
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
                "marker": {"color": _color(1), "size": 11, "symbol": "x"},
                "hovertext": [
                    f"side test: {_esc(s.label)}<br>{_fmt(s.value, 2)} {unit}"
                    + (f"<br>{_esc(s.detail)}" if s.detail else "")
                    for s in side
                ],
                "hoverinfo": "text",
            }
        )
        layout["xaxis"]["tickvals"] = list(range(1, first + len(side)))
        layout["xaxis"]["ticktext"] = [*layout["xaxis"]["ticktext"], *[f"({_esc(_step_tick(s.label))})" for s in side]]
    return {"data": data, "layout": layout}


def _step_tick(label: str, chars: int = 18) -> str:
    """Return a step's tick label: "Phase 10" of "Phase 10: The n_gpu=17 Breakthrough",
    else the label cut to ``chars``."""
    head = label.split(":", 1)[0].strip()
    return head if len(head) <= chars else head[: chars - 1] + "…"


_POWER_LAW = re.compile(
    r"=\s*(?P<a>[0-9.eE+-]+)\s*[*×]\s*\(\s*(?P<b>[0-9.]+)\s*-\s*(?P<x>[A-Za-z_]+)\s*\)\s*\^\s*(?P<alpha>[0-9.]+)"
)


@dataclass(frozen=True)
class PowerLaw:
    """``y = a × (b − x)^alpha``, as seed 003 printed its fit."""

    a: float
    b: float
    alpha: float
    x_name: str


def power_law_from(formula: str) -> PowerLaw | None:
    """Return the power law a formula like ``tok/s = 9.81e-6 * (42 - model_size_gb)^4.247``
    states; None for any other shape."""
    match = _POWER_LAW.search(formula or "")
    if match is None:
        return None
    try:
        return PowerLaw(float(match["a"]), float(match["b"]), float(match["alpha"]), match["x"])
    except ValueError:
        return None


def power_law_figure(law: PowerLaw, *, label: str, points: int = 41) -> Figure:
    """Return the fitted curve over x in [0, b] (where the law is defined)."""
    xs = [law.b * i / (points - 1) for i in range(points)]
    ys = [law.a * (law.b - x) ** law.alpha for x in xs]
    data = [
        {
            "type": "scatter",
            "mode": "lines",
            "name": _esc(label),
            "x": xs,
            "y": ys,
            "line": {"color": _color(4)},
            "hovertext": [f"{_esc(law.x_name)} = {_fmt(x)}<br>{_fmt(y, 2)} t/s" for x, y in zip(xs, ys, strict=True)],
            "hoverinfo": "text",
        }
    ]
    layout = _base_layout(
        height=300,
        xaxis={"title": {"text": _esc(law.x_name)}},
        yaxis={"title": {"text": "decode t/s (fit)"}, "rangemode": "tozero"},
        showlegend=False,
    )
    return {"data": data, "layout": layout}


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
        f"#{r.run_id} {_esc(r.rig)}<br>{_esc(r.model)} {_esc(r.quantization)}"
        f"<br>decode: {_fmt(r.decode_tokens_per_s_mean, 2)} t/s"
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
                    "name": _esc(engine),
                    "x": [axis.value(r) for r in shown],
                    "y": [r.decode_tokens_per_s_mean for r in shown],
                    "marker": {"color": _color(i), "size": 10, "opacity": 0.85},
                    "hovertext": [
                        f"{_run_hover(r)}<br>{axis.title}: {_fmt(axis.value(r), 1)} {axis.unit}" for r in shown
                    ],
                    "hoverinfo": "text",
                }
            )
    layout = _base_layout(
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
                "name": _esc(engine),
                "x": [r.decode_tokens_per_s_mean for r in mine],
                "y": [f"#{r.run_id} {_esc(r.model)}" for r in mine],
                "marker": {"color": _color(i)},
                "hovertext": [_run_hover(r) for r in mine],
                "hoverinfo": "text",
            }
        )
    layout = _base_layout(
        height=max(240, 24 * len(shown) + 110),
        xaxis={"title": {"text": "decode t/s"}, "rangemode": "tozero"},
        yaxis={
            "autorange": "reversed",
            "automargin": True,
            "categoryorder": "array",
            "categoryarray": [f"#{r.run_id} {_esc(r.model)}" for r in shown],
        },
        legend={"orientation": "h", "y": -0.15, "title": {"text": "engine"}},
        margin={"l": 10, "r": 20, "t": 20, "b": 60},
    )
    return {"data": data, "layout": layout}

"""The timeline figures, pure: TimelinePoints in, Plotly figure dicts out
(drawn by the site's vendored plotly.js through static/boards/charts.js).

One point per build on a category axis of short commits. A failed build is a
gap in the line (None, connectgaps off) with a grey band and a "build failed"
label; regressions and improvements are red / green markers. Commits and other
text are escaped: Plotly renders a subset of HTML in labels and hover text."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from leaderboard.core.charts import Figure, base_layout
from leaderboard.core.charts import esc as _esc
from leaderboard.regressions.selectors import TimelinePoint

METRICS = (
    ("decode_tokens_per_s_mean", "Decode", "t/s"),
    ("prefill_tokens_per_s_mean", "Prefill", "t/s"),
    ("ttft_ms_mean", "TTFT", "ms"),
    ("power_w_mean", "Power", "W"),
)


def _layout(title: str, unit: str, points: Sequence[TimelinePoint]) -> dict[str, Any]:
    shapes, annotations = [], []
    for p in points:
        if p.failed:
            x = _esc(p.short_commit)
            shapes.append(
                {"type": "rect", "xref": "x", "yref": "paper", "x0": x, "x1": x, "y0": 0, "y1": 1,
                 "line": {"color": "#bbbbbb", "width": 12}, "opacity": 0.35}
            )  # fmt: skip
            annotations.append(
                {"x": x, "xref": "x", "y": 1, "yref": "paper", "text": "build failed", "showarrow": False,
                 "font": {"size": 10, "color": "#777777"}}
            )  # fmt: skip
    return base_layout(
        # The legend above the plot: below it, it sat on the x axis's title (and on
        # upright commit labels on a phone).
        margin={"l": 60, "r": 20, "t": 60, "b": 60},
        legend={"orientation": "h", "x": 0, "y": 1.1, "yanchor": "bottom"},
        xaxis={"type": "category", "title": {"text": "build (commit)"}},
        yaxis={"title": {"text": f"{title} ({unit})"}},
        shapes=shapes,
        annotations=annotations,
        height=320,
    )


def _hover(p: TimelinePoint, value: float | None, unit: str) -> str:
    parts = [f"{_esc(p.short_commit)}", _esc(p.status_label)]
    if value is not None:
        parts.append(f"{value:,.2f} {unit}")
    if p.verdict_kind and p.effect_pct is not None:
        p_text = f" (p={p.p_value:.2g})" if p.p_value is not None else ""
        parts.append(f"{_esc(p.verdict_kind)} {p.effect_pct:+.2f}%{p_text}")
        if p.noise_floor_label:
            parts.append(f"noise floor {_esc(p.noise_floor_label)}")
    if p.confirmation_words:
        parts.append(_esc(p.confirmation_words))
    if p.first_bad_commit:
        parts.append(f"first slow commit {_esc(p.first_bad_commit[:10])}")
    return "<br>".join(parts)


def metric_figure(points: Sequence[TimelinePoint], attr: str, title: str, unit: str) -> Figure:
    """Return one metric's timeline; decode also gets its 95% CI band and the
    verdict markers. With no figure at all, return a figure with no traces."""
    xs = [_esc(p.short_commit) for p in points]
    ys = [getattr(p, attr) for p in points]
    if all(y is None for y in ys):
        return {"data": [], "layout": _layout(title, unit, points)}
    data: list[dict[str, Any]] = []
    if attr == "decode_tokens_per_s_mean":
        lows = [p.decode_tokens_per_s_ci95_low for p in points]
        highs = [p.decode_tokens_per_s_ci95_high for p in points]
        data.append({"type": "scatter", "mode": "lines", "x": xs, "y": highs, "line": {"width": 0},
                     "hoverinfo": "skip", "showlegend": False, "connectgaps": False})  # fmt: skip
        data.append({"type": "scatter", "mode": "lines", "x": xs, "y": lows, "line": {"width": 0},
                     "fill": "tonexty", "fillcolor": "rgba(31,119,180,0.2)", "name": "95% CI",
                     "hoverinfo": "skip", "connectgaps": False})  # fmt: skip
    data.append(
        {"type": "scatter", "mode": "lines+markers", "x": xs, "y": ys, "name": f"{title} ({unit})",
         "connectgaps": False, "line": {"color": "#1f77b4"},
         "text": [_hover(p, y, unit) for p, y in zip(points, ys, strict=True)], "hoverinfo": "text"}
    )  # fmt: skip
    if attr == "decode_tokens_per_s_mean":
        for kind, color, symbol in (
            ("regression", "#d62728", "triangle-down"),
            ("improvement", "#2ca02c", "triangle-up"),
        ):
            marked = [
                (x, y, p) for x, y, p in zip(xs, ys, points, strict=True) if p.verdict_kind == kind and y is not None
            ]
            if marked:
                data.append(
                    {"type": "scatter", "mode": "markers", "name": kind, "x": [m[0] for m in marked],
                     "y": [m[1] for m in marked], "marker": {"color": color, "symbol": symbol, "size": 14},
                     "text": [_hover(m[2], m[1], unit) for m in marked], "hoverinfo": "text"}
                )  # fmt: skip
    return {"data": data, "layout": _layout(title, unit, points)}


def timeline_figures(points: Sequence[TimelinePoint]) -> list[tuple[str, str, Figure]]:
    """Return (element id, label, figure) for each metric, decode first."""
    return [
        (f"timeline-{attr.split('_')[0]}", f"{title} ({unit}) per build", metric_figure(points, attr, title, unit))
        for attr, title, unit in METRICS
    ]

"""The campaign page's Plotly figures (best-so-far, parallel coordinates, fits,
Pareto front), from the analysis. Pure: no queries; every user string goes
through core.charts.esc once, here."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from leaderboard.campaigns.analysis import Analysis
from leaderboard.core.charts import base_layout, esc, power_law_trace
from leaderboard.core.fits import PowerFit

FRONT = "#d62728"
DOMINATED = "#8c8c8c"


def _layout(**extra: Any) -> dict[str, Any]:
    """Return the house layout with the legend above the plot: below it, on a
    390 px phone, it runs into the x axis's title."""
    return base_layout(
        legend={"orientation": "h", "x": 0, "y": 1.02, "yanchor": "bottom"},
        margin={"l": 60, "r": 20, "t": 40, "b": 50},
        **extra,
    )


def best_so_far_figure(analysis: Analysis, objective: str) -> dict[str, Any]:
    xs = [p["number"] for p in analysis.best_so_far]
    return {
        "data": [
            {
                "type": "scatter",
                "mode": "markers",
                "name": "trial",
                "x": xs,
                "y": [p["value"] for p in analysis.best_so_far],
                "marker": {"color": "#1f77b4"},
            },
            {
                "type": "scatter",
                "mode": "lines",
                "name": "best so far",
                "x": xs,
                "y": [p["best"] for p in analysis.best_so_far],
                "line": {"shape": "hv", "color": FRONT},
            },
        ],  # fmt: skip
        "layout": _layout(xaxis={"title": {"text": "trial"}}, yaxis={"title": {"text": esc(objective)}}),
    }


def _shade(share: float) -> str:
    """Return a colour from blue (the slowest trial) to red (the fastest); a share
    that is not a number in 0…1 (a span that overflowed) is drawn mid-scale."""
    share = min(max(share, 0.0), 1.0) if math.isfinite(share) else 0.5
    return f"rgb({int(40 + 200 * share)},{int(80 * (1 - share))},{int(200 * (1 - share))})"


def parallel_figure(spec: Mapping[str, Any], trials: Sequence[Any], *, objective_label: str = "") -> dict[str, Any]:
    """Return one line per trial across the parameters' axes (each value at its place in
    the space's list) and the objective; failed trials dotted at the objective's floor.
    Drawn with scatter lines: the vendored basic bundle has no parcoords."""
    space: dict[str, list[Any]] = dict(spec.get("space") or {})
    names = list(space)
    values = [t.value for t in trials if t.value is not None]
    low, high = (min(values), max(values)) if values else (0.0, 1.0)
    span = (high - low) or 1.0
    data = []
    for trial in trials[:300]:
        ys: list[float | None] = [
            space[n].index(trial.params[n]) / max(len(space[n]) - 1, 1) if trial.params.get(n) in space[n] else None
            for n in names
        ]
        share = (trial.value - low) / span if trial.value is not None else None
        ys.append(share if share is not None else 0.0)
        hover = esc(f"trial {trial.number}: {trial.value if trial.value is not None else trial.state} "
                    + ", ".join(f"{n}={trial.params.get(n)}" for n in names))  # fmt: skip
        data.append({
            "type": "scatter", "mode": "lines+markers",
            "x": [*(esc(n) for n in names), esc(objective_label or spec.get("objective", "objective"))], "y": ys,
            "line": {"color": _shade(share) if share is not None else "#999999",
                     "dash": "solid" if share is not None else "dot", "width": 1.5},
            "hovertext": hover, "hoverinfo": "text", "showlegend": False,
        })  # fmt: skip
    return {
        "data": data,
        "layout": base_layout(
            # A short title: a long one is cut where the plot is short (a phone).
            yaxis={"title": {"text": "place in its list"}, "range": [-0.05, 1.05], "automargin": True},
            margin={"l": 60, "r": 20, "t": 30, "b": 80},
        ),
    }


def fit_figure(fit: Mapping[str, Any], objective: str) -> dict[str, Any]:
    """Return the trials' points with the chosen fit drawn over them (solid) and the
    other form (dotted), each named with its formula and R²; the points alone when
    the fit does not explain them (``explains`` false: analysis.fit_points)."""
    xs = [p["x"] for p in fit["points"]]
    low, high = min(xs), max(xs)
    curve_x = [low + (high - low) * i / 60 for i in range(61)]
    data: list[dict[str, Any]] = [
        {"type": "scatter", "mode": "markers", "name": "trials", "x": xs, "y": [p["y"] for p in fit["points"]],
         "marker": {"color": "#1f77b4"}},
    ]  # fmt: skip
    for shown, dash in ((fit, "solid"), (fit.get("alternative"), "dot")):
        if shown and fit.get("explains", True):
            line = {"dash": dash, "color": FRONT if dash == "solid" else DOMINATED}
            data.append(power_law_trace(PowerFit.from_dict(shown), curve_x, line=line))
    return {
        "data": data,
        "layout": _layout(
            xaxis={"title": {"text": esc(fit["parameter"])}}, yaxis={"title": {"text": esc(objective)}}, height=380
        ),
    }


def _label(point: Mapping[str, Any], names: Sequence[str]) -> str:
    return ", ".join(f"{n}={str(point['params'].get(n)).rsplit('/', 1)[-1]}" for n in names) or f"#{point['number']}"


def pareto_figure(analysis: Analysis, objective: str, names: Sequence[str]) -> dict[str, Any]:
    """Return the measured trials as speed (y) over quality (x: perplexity, lower
    better), marker size growing with peak VRAM; the front red and labelled with
    its parameters, dominated trials grey. When not every trial has a perplexity,
    x is the peak VRAM, and when not every trial has that either, the trial number."""
    points = analysis.pareto_points
    if all(p["perplexity"] is not None for p in points):
        axis, title = "perplexity", "perplexity (lower is better)"
    elif all(p["vram_peak_mib"] is not None for p in points):
        axis, title = "vram_peak_mib", "peak VRAM, MiB (lower is better)"
    else:
        axis, title = "number", "trial (no perplexity or VRAM for every trial)"
    vram = [p["vram_peak_mib"] for p in points if p["vram_peak_mib"] is not None]
    top = max(vram) if vram else None
    data = []
    for on_front, name, color in ((False, "dominated", DOMINATED), (True, "Pareto front", FRONT)):
        chosen = [p for p in points if p["on_front"] is on_front]
        if not chosen:
            continue
        data.append({
            "type": "scatter", "mode": "markers+text" if on_front else "markers", "name": name,
            "x": [p[axis] for p in chosen], "y": [p["value"] for p in chosen],
            "text": [esc(_label(p, names)) if on_front else "" for p in chosen],
            "textposition": "top center", "textfont": {"size": 10}, "cliponaxis": False,
            "hovertext": [esc(f"trial {p['number']}: {_label(p, names)}; {objective} {p['value']:.3g}, "
                              f"perplexity {_or_unmeasured(p['perplexity'])}, peak VRAM "
                              + (f"{p['vram_peak_mib']:.0f} MiB" if p["vram_peak_mib"] is not None else "not measured"))
                          for p in chosen],
            "hoverinfo": "text",
            "marker": {"color": color, "line": {"width": 1, "color": "#333"},
                       "size": [8 + 14 * (p["vram_peak_mib"] / top) if top and p["vram_peak_mib"] else 10
                                for p in chosen]},
        })  # fmt: skip
    values = [p["value"] for p in points]
    # Headroom above the fastest point for its label.
    top_y = max(values) * 1.15 if values and max(values) > 0 else None
    yaxis = {"title": {"text": esc(objective)}, **({"range": [0, top_y]} if top_y else {})}
    return {"data": data, "layout": _layout(xaxis={"title": {"text": title}}, yaxis=yaxis)}


def _or_unmeasured(value: float | None) -> str:
    return f"{value:.4g}" if value is not None else "not measured"

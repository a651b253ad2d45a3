"""What every Plotly figure of the site shares (boards/charts/, campaigns/charts.py,
regressions/charts.py): the base layout, the escaping of text that enters a
figure, the numbers in hover text, and a power law's curve (core/fits.py)."""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from typing import Any

from leaderboard.core.fits import PowerFit

Figure = dict[str, Any]


def esc(text: object) -> str:
    """Return ``text`` as text Plotly shows literally: the one escape for every
    user string that enters a figure (names, legends, hover text, tick labels).

    Plotly renders that text as a small subset of HTML (``<a href>``, ``<b>``,
    ``<br>``…), so a label ``<a href="//evil.example">`` would be a live link;
    escaping ``&``, ``<`` and ``>`` stops every tag. Quotes are left alone:
    Plotly decodes only a few entities (``&lt;``, ``&gt;``, ``&amp;``…), so an
    escaped ``"`` would show as a literal ``&quot;``, and outside a tag a quote
    is harmless. Escape once, here, never in the data handed to a figure."""
    return html.escape(str(text), quote=False)


def base_layout(**extra: Any) -> dict[str, Any]:
    """Return the layout every figure starts from, with ``extra`` keys set on top
    (a key of the base keeps its place in the JSON, new keys follow)."""
    layout: dict[str, Any] = {
        "margin": {"l": 60, "r": 20, "t": 30, "b": 50},
        "hovermode": "closest",
        "font": {"family": "system-ui, sans-serif", "size": 12},
        "legend": {"orientation": "h", "y": -0.2},
        "paper_bgcolor": "rgba(0,0,0,0)",
        "plot_bgcolor": "#fafafa",
    }
    layout.update(extra)
    return layout


def pane_grid(
    panes: Sequence[tuple[str, dict[str, Any], dict[str, Any]]], *, columns: int, **extra: Any
) -> tuple[dict[str, Any], list[str]]:
    """Return the layout of a grid of independent panes, ``columns`` wide, and each
    pane's axis suffix ('' for the first, then '2', '3'…) for its traces' ``xaxis``
    / ``yaxis`` (``"x" + suffix``). ``panes`` are (title HTML, x axis, y axis); each
    title is set above its pane. ``extra`` layout keys follow the grid's (e.g.
    ``shapes=[]``). No panes still gives one row, so an empty figure keeps its size."""
    rows = max(1, math.ceil(len(panes) / columns))
    layout = base_layout(
        grid={"rows": rows, "columns": columns, "pattern": "independent", "ygap": 0.45, "xgap": 0.15},
        height=280 * rows + 60,
        annotations=[],
        **extra,
    )
    suffixes = []
    for i, (title, x_axis, y_axis) in enumerate(panes, start=1):
        suffix = "" if i == 1 else str(i)
        suffixes.append(suffix)
        layout[f"xaxis{suffix}"] = x_axis
        layout[f"yaxis{suffix}"] = y_axis
        layout["annotations"].append(
            {
                "text": title,
                "xref": f"x{suffix} domain",
                "yref": f"y{suffix} domain",
                "x": 0,
                "y": 1.12,
                "showarrow": False,
                "xanchor": "left",
            }
        )
    return layout, suffixes


def legend_key(name: str, *, group: str, color: str) -> dict[str, Any]:
    """Return a trace with no points that names ``group`` once in the legend, in
    ``color``: a figure of several panes names each pane's line for its run and its
    figure (no two traces share a name) and shows none of them in the legend.
    ``name`` is escaped by the caller."""
    return {
        "type": "scatter",
        "mode": "lines+markers",
        "name": name,
        "legendgroup": group,
        "x": [None],
        "y": [None],
        "hoverinfo": "skip",
        "line": {"color": color},
        "meta": {"legend": True},
    }


def fmt(value: float | None, digits: int = 1) -> str:
    """Return ``value`` as hover text prints it: ``digits`` decimals with thousands
    separators, none from 10,000 up; "–" for None."""
    if value is None:
        return "–"
    if abs(value) >= 10_000:
        return f"{value:,.0f}"
    return f"{value:,.{digits}f}"


def power_law_trace(
    fit: PowerFit, xs: Sequence[float], *, line: dict[str, Any], name: str | None = None, y_unit: str = ""
) -> dict[str, Any]:
    """Return ``fit`` drawn over ``xs`` as a line trace: y is ``fit.predict`` (None,
    a gap, outside the law's domain). Named ``name``, else by the fit itself (its
    formula and R²); with ``y_unit``, each point's hover names x and y."""
    ys = [fit.predict(x) for x in xs]
    label = name if name is not None else fit.formula() + (f", R² = {fit.r2:.3f}" if fit.r2 is not None else "")
    trace: dict[str, Any] = {
        "type": "scatter",
        "mode": "lines",
        "x": list(xs),
        "y": ys,
        "name": esc(label),
        "line": line,
    }
    if y_unit:
        trace["hovertext"] = [
            f"{esc(fit.parameter)} = {fmt(x)}<br>{fmt(y, 2)} {y_unit}" for x, y in zip(xs, ys, strict=True)
        ]
        trace["hoverinfo"] = "text"
    return trace

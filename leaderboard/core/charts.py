"""What every Plotly figure of the site shares (boards/charts.py, regressions/charts.py):
the base layout and the escaping of text that enters a figure."""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from typing import Any


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

"""What every Plotly figure of the site shares (boards/charts.py, regressions/charts.py):
the base layout and the escaping of text that enters a figure."""

from __future__ import annotations

import html
from typing import Any


def esc(text: object) -> str:
    """Return ``text`` HTML-escaped: Plotly renders a subset of HTML in trace
    names, hover text and labels, so user-provided strings go through this."""
    return html.escape(str(text), quote=True)


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

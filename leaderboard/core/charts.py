"""What every Plotly figure of the site shares (boards/charts.py, regressions/charts.py):
the base layout and the escaping of text that enters a figure."""

from __future__ import annotations

import html
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

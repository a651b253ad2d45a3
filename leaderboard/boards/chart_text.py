"""The one escape for text that reaches a Plotly chart (names, legends, hover
text, tick labels), used by every chart builder (boards/charts.py,
regressions/charts.py).

Plotly renders that text as a small subset of HTML: ``<a href>``, ``<b>``,
``<br>``… so a user's ``<a href="//evil.example">`` would be a live link.
Escaping ``&``, ``<`` and ``>`` is enough to stop every tag. Quotes are left
alone: Plotly decodes only a few entities (``&lt;``, ``&gt;``, ``&amp;``…), so
an escaped ``"`` would show as a literal ``&quot;``, and outside a tag a quote
is harmless. Escape once, at the figure, never in the data handed to it."""

from __future__ import annotations

import html


def chart_text(value: object) -> str:
    """Return ``value`` as text Plotly shows literally."""
    return html.escape(str(value), quote=False)

"""The boards' figure colours: one per series, in order."""

from __future__ import annotations

PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf")


def color(i: int) -> str:
    """Return the ``i``-th series' colour (the palette repeats)."""
    return PALETTE[i % len(PALETTE)]

"""A fit an article printed (seed 003's power law), drawn as its curve."""

from __future__ import annotations

from leaderboard.boards.charts.palette import color
from leaderboard.core.charts import Figure, base_layout, esc, power_law_trace
from leaderboard.core.fits import PowerFit


def power_law_figure(fit: PowerFit, *, label: str, points: int = 41) -> Figure:
    """Return the fitted curve named ``label`` over x in [0, C], where a·(C − x)^α is
    defined (at C itself, where the law reaches zero, a gap); [0, 1] for a fit with no C."""
    span = fit.c if fit.c is not None else 1.0
    xs = [span * i / (points - 1) for i in range(points)]
    layout = base_layout(
        height=300,
        xaxis={"title": {"text": esc(fit.parameter)}},
        yaxis={"title": {"text": "decode t/s (fit)"}, "rangemode": "tozero"},
        showlegend=False,
    )
    return {"data": [power_law_trace(fit, xs, line={"color": color(4)}, name=label, y_unit="t/s")], "layout": layout}

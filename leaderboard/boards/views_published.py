"""The published result sets' pages: comparisons, experiments and their sources, as printed."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from leaderboard.boards.charts.bars import BarItem, bar_figure
from leaderboard.boards.charts.power_law import power_law_figure
from leaderboard.boards.charts.steps import StepData, steps_figure
from leaderboard.boards.formatting import printed_figure
from leaderboard.boards.selectors.leaderboard import (
    rows_by_ids,
    usd_per_kwh_from,
)
from leaderboard.boards.selectors.published import (
    comparison_detail,
    comparisons_list,
    experiment_journeys,
    source_detail,
)
from leaderboard.core.fits import printed_fit
from leaderboard.results.models import PublishedExperiment, Run


@require_GET
def published_comparisons(request: HttpRequest) -> HttpResponse:
    return render(request, "boards/published_comparisons.html", {"comparisons": comparisons_list()})


@require_GET
def published_comparison(request: HttpRequest, comparison_id: int) -> HttpResponse:
    comparison = comparison_detail(comparison_id=comparison_id)
    if comparison is None:
        raise Http404("no such comparison")
    rows = list(comparison.rows.all())
    figure = bar_figure(
        [
            BarItem(
                label=r.label,
                value=r.decode_tokens_per_s,
                detail=r.note,
                shown=printed_figure(r, "decode_tokens_per_s"),
            )
            for r in rows
        ]
    )
    run_ids = ",".join(str(r.run_id) for r in rows if r.run_id)
    return render(
        request,
        "boards/published_comparison.html",
        {"comparison": comparison, "rows": rows, "bar_figure": figure, "run_ids": run_ids},
    )


@require_GET
def source_page(request: HttpRequest, source_id: int) -> HttpResponse:
    """An article the reported runs cite: what it is, its runs, its tables."""
    source = source_detail(source_id=source_id)
    if source is None:
        raise Http404("no such source")
    price = usd_per_kwh_from(request.GET.get("usd_per_kwh"))
    ids = list(
        Run.objects.public()
        .filter(source_id=source_id)
        .order_by("-decode_tokens_per_s_mean", "pk")
        .values_list("pk", flat=True)[:200]
    )
    context = {"source": source, "rows": rows_by_ids(ids, usd_per_kwh=price)}
    return render(request, "boards/source.html", context)


def _step(phase: PublishedExperiment, label: str) -> StepData:
    return StepData(label, phase.decode_tokens_per_s, phase.notes, printed_figure(phase, "decode_tokens_per_s"))


@require_GET
def experiments(request: HttpRequest) -> HttpResponse:
    """Every article's tuning journey, each at ``#source-<id>``: the one page for them
    (/campaigns/reported/<id>/ redirects here)."""
    journeys = []
    for position, journey in enumerate(experiment_journeys(), start=1):
        figure = steps_figure(
            [_step(p, f"{p.phase}: {p.label}") for p in journey.phases],
            side_tests=[_step(p, p.label) for p in journey.side_tests],
        )
        fits = []
        for fit_position, fit in enumerate(journey.fits, start=1):
            law = printed_fit(fit.formula)
            fit_figure = power_law_figure(law, label=fit.name) if law else None
            fits.append((fit, law, fit_figure, f"fit-{position}-{fit_position}"))
        # Seed 003's fit is over a figure its phases do not give (the GB of the model in system RAM).
        refit_note = journey.source.key.startswith("003")
        journeys.append((journey, figure, f"journey-{position}", fits, refit_note))
    return render(request, "boards/experiments.html", {"journeys": journeys})

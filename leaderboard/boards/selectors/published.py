"""Reads for the pages of what the articles published: their comparison
tables (seed 002's stacks beside a cloud API) and tuning experiments (seed 003's phases)."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db.models import Count, Prefetch, QuerySet

from leaderboard.results.models import (
    PublishedComparison,
    PublishedComparisonRow,
    PublishedExperiment,
    PublishedFit,
    Source,
)


def comparisons_list() -> QuerySet[PublishedComparison]:
    """Return every published comparison with its source and row count, by source then title."""
    return (
        PublishedComparison.objects.select_related("source")
        .annotate(row_count=Count("rows"))
        .order_by("source__title", "title", "pk")
    )


def comparison_detail(*, comparison_id: int) -> PublishedComparison | None:
    """Return one comparison with its rows (by position) and each row's run; None if unknown."""
    rows = PublishedComparisonRow.objects.select_related("run").order_by("position")
    return (
        PublishedComparison.objects.select_related("source")
        .prefetch_related(Prefetch("rows", queryset=rows))
        .filter(pk=comparison_id)
        .first()
    )


@dataclass(frozen=True)
class ExperimentJourney:
    source: Source
    # The numbered phases, in order: the journey itself.
    phases: list[PublishedExperiment]
    # Steps without a phase (seed 003's "16-Thread Trap"): side tests, not the journey's end.
    side_tests: list[PublishedExperiment] = field(default_factory=list)
    fits: list[PublishedFit] = field(default_factory=list)


def experiment_journeys() -> list[ExperimentJourney]:
    """Return each source's tuning phases in their published order, its side
    tests (steps the article gives no phase) apart, and its fitted laws (two queries)."""
    phases = PublishedExperiment.objects.select_related("source").order_by("source__title", "source_id", "position")
    journeys: dict[int, ExperimentJourney] = {}
    for phase in phases:
        journey = journeys.setdefault(phase.source_id, ExperimentJourney(source=phase.source, phases=[]))
        (journey.phases if phase.phase.strip() else journey.side_tests).append(phase)
    for fit in PublishedFit.objects.filter(source_id__in=list(journeys)).order_by("name", "pk"):
        journeys[fit.source_id].fits.append(fit)
    return list(journeys.values())


def source_detail(*, source_id: int) -> Source | None:
    """Return one source with its comparisons (by title) prefetched; None if unknown."""
    return (
        Source.objects.prefetch_related(
            Prefetch("comparisons", queryset=PublishedComparison.objects.order_by("title", "pk")),
            Prefetch("fits", queryset=PublishedFit.objects.order_by("name", "pk")),
        )
        .annotate(n_experiments=Count("experiments", distinct=True))
        .filter(pk=source_id)
        .first()
    )

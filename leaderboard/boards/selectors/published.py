"""Reads for the pages of what the articles published: their comparison
tables (seed 002's stacks beside a cloud API) and tuning experiments (seed 003's phases)."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Count, Prefetch, QuerySet

from leaderboard.results.models import PublishedComparison, PublishedComparisonRow, PublishedExperiment, Source


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
    phases: list[PublishedExperiment]


def experiment_journeys() -> list[ExperimentJourney]:
    """Return each source's tuning phases in their published order (two queries)."""
    phases = PublishedExperiment.objects.select_related("source").order_by("source__title", "source_id", "position")
    journeys: dict[int, ExperimentJourney] = {}
    for phase in phases:
        journey = journeys.setdefault(phase.source_id, ExperimentJourney(source=phase.source, phases=[]))
        journey.phases.append(phase)
    return list(journeys.values())

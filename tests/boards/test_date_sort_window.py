"""A sort on the shown date reads only the runs that can reach the page
(``filters.date_sort_window``) and shows what sorting every run shows: every page, both
directions, measured runs over several days beside reported runs dated by a day, a month,
a year or not at all. And a sort on a column a filter fixes (one rig, sorted by rig) orders
as the default ranking, which is the same order."""

from __future__ import annotations

import datetime as dt

import pytest

from leaderboard.boards.filters import (
    cost_sort_window,
    date_sort_window,
)
from leaderboard.results.models import Run, RunStatus, Source
from tests.fixtures.board_pages import pages, plain_order

pytestmark = pytest.mark.django_db


@pytest.fixture
def dated_runs(board_run, reported_run) -> list[Run]:
    day = dt.datetime(2026, 3, 14, 12, tzinfo=dt.UTC)
    runs = [
        board_run(tps=[100.0 + i], created_at=day + dt.timedelta(hours=7 * i), rig=f"rig-{i % 3}") for i in range(9)
    ]
    for i, published in enumerate(["2026-03-15", "2026-03", "2026", "", "2026-03-16", "2025-12"]):
        run = reported_run(decode=120.0 + i, label=f"Reported {i}")
        source = Source.objects.create(key=f"src-{i}", title=f"Source {i}", published_date=published)
        Run.objects.filter(pk=run.pk).update(source=source)
        runs.append(run)
    return runs


@pytest.mark.parametrize("sort", ["-date", "date"])
@pytest.mark.parametrize("per_page", [1, 2, 4])
def test_every_page_of_a_date_sort_shows_what_sorting_every_run_shows(dated_runs, sort, per_page) -> None:
    reference = plain_order(f"sort={sort}")
    assert len(reference) == len(dated_runs)
    shown = pages(f"sort={sort}", per_page=per_page)
    assert [run for page in shown for run in page] == reference
    assert shown[0] == reference[:per_page]
    # The window did leave runs out (the check above would pass without one).
    base = Run.objects.filter(status=RunStatus.FINISHED)
    assert 0 < date_sort_window(base, sort, rows=per_page).count() < len(dated_runs)


def test_the_comparison_can_tell_two_date_orders_apart(dated_runs) -> None:
    assert plain_order("sort=-date") != plain_order("sort=date")[::-1]  # ties keep decode order both ways
    assert plain_order("sort=-date")[:3] != plain_order("sort=date")[:3]


def test_a_date_sort_under_a_filter_shows_the_plain_order(dated_runs) -> None:
    for query in ("sort=-date&rig=rig-1", "sort=date&provenance=reported", "sort=-date&since=2026-03-15"):
        assert [run for page in pages(query, per_page=2) for run in page] == plain_order(query), query


@pytest.mark.parametrize("sort", ["cost", "-cost"])
def test_every_page_of_a_cost_sort_shows_what_sorting_every_run_shows(dated_runs, sort) -> None:
    # Electricity costs from tokens/kWh beside published prices on both sides of them.
    for i, run in enumerate(dated_runs):
        if run.provenance == "reported":
            Run.objects.filter(pk=run.pk).update(cost_usd_per_mtok=[0.01, 0.5, 2.0, None, 150.0, 0.02][i - 9])
        else:
            Run.objects.filter(pk=run.pk).update(tokens_per_kwh=[1e5, 3e5, 2e7, 5e6, None, 0, 1e6, 2e6, 4e6][i])
    reference = plain_order(f"sort={sort}")
    for per_page in (1, 2, 3):
        assert [run for page in pages(f"sort={sort}", per_page=per_page) for run in page] == reference
    base = Run.objects.filter(status=RunStatus.FINISHED)
    assert 0 < cost_sort_window(base, sort, rows=2, usd_per_kwh=0.15).count() < len(dated_runs)
    assert cost_sort_window(base, sort, rows=2, usd_per_kwh=0).count() == len(dated_runs)  # all costs tie


def test_a_sort_on_the_rig_a_filter_fixes_shows_the_plain_order(dated_runs) -> None:
    for query in ("sort=rig&rig=rig-1", "sort=-rig&rig=rig-2", "sort=-engine&engine=llama.cpp"):
        assert [run for page in pages(query, per_page=2) for run in page] == plain_order(query), query

"""Every page's query count is the same for 2 and for 20 rows: no N+1 queries."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.core.cache import cache
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from leaderboard.results.models import PublishedComparison, PublishedComparisonRow, PublishedExperiment, Run, Source
from tests.fixtures.boards import sweep_points

pytestmark = pytest.mark.django_db


def queries_for(client: Client, url: str) -> int:
    """Return the queries of ``url`` read cold (nothing kept from an earlier request: core/datacache.py)."""
    cache.clear()
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url)
        if response.streaming:  # an export reads its rows as it streams them
            b"".join(response.streaming_content)
    assert response.status_code == 200, url
    return len(captured)


def make_runs(board_run, reported_run, count: int) -> list[Run]:
    """Return ``count`` runs over several rigs (two GPU groups each), half with sweeps, one reported."""
    runs = [reported_run(decode=150.0)]
    for i in range(count - 1):
        runs.append(
            board_run(
                rig=f"rig-{i % 4}",
                gpus=[("RTX 3090", 2), ("RTX 3090 Ti", 1)],
                model=f"model-{i}",
                tps=[100.0 + i, 101.0 + i, 99.0 + i],
                sweep=sweep_points() if i % 2 else [],
            )
        )
    return runs


PAGES: dict[str, Callable[[list[Run]], str]] = {
    "leaderboard": lambda runs: "/?per_page=50",
    "leaderboard filtered": lambda runs: "/?gpu=RTX+3090&spec=mtp&provenance=measured&sort=gpu",
    "leaderboard csv": lambda runs: "/leaderboard.csv",
    "leaderboard json": lambda runs: "/leaderboard.json?sort=-cost",
    "rig": lambda runs: f"/rigs/{runs[1].rig_id}/",
    "run": lambda runs: f"/runs/{runs[-1].pk}/",
    "compare": lambda runs: "/compare/?runs=" + ",".join(str(r.pk) for r in runs[:6]),
    "sweeps": lambda runs: "/sweeps/?runs=" + ",".join(str(r.pk) for r in runs[:6]),
    "sweeps to pick": lambda runs: "/sweeps/",
    "rigs": lambda runs: "/rigs/",
    "gpus": lambda runs: "/gpus/",
    "models": lambda runs: "/models/",
    "leaderboard mixed": lambda runs: "/?workload=all",
}


@pytest.mark.parametrize("page", list(PAGES))
def test_the_query_count_does_not_grow_with_the_rows(client: Client, board_run, reported_run, page: str) -> None:
    few = make_runs(board_run, reported_run, 2)
    # Compare two runs against six at most; the other pages see 2 then 20 rows.
    small = queries_for(client, PAGES[page](few))
    many = make_runs(board_run, reported_run, 20)
    large = queries_for(client, PAGES[page](many))

    assert large == small, f"{page}: {small} queries with 2 rows, {large} with 20"


def test_the_run_page_costs_the_same_with_10_or_100_repetitions(client: Client, board_run) -> None:
    short = board_run(tps=[100.0] * 10, sweep=sweep_points()[:2])
    long = board_run(tps=[100.0 + i % 7 for i in range(100)], sweep=sweep_points())

    assert queries_for(client, f"/runs/{short.pk}/") == queries_for(client, f"/runs/{long.pk}/")


@pytest.mark.parametrize("rows", [2, 20])
def test_the_published_pages_have_a_fixed_query_count(client: Client, rows: int) -> None:
    source = Source.objects.create(key=f"src-{rows}", title="Seed 002")
    for c in range(rows):
        comparison = PublishedComparison.objects.create(key=f"cmp-{c}", source=source, title=f"Comparison {c}")
        for position in range(rows):
            PublishedComparisonRow.objects.create(
                comparison=comparison, position=position, label=f"row {position}", decode_tokens_per_s=100.0 + position
            )
        PublishedExperiment.objects.create(
            source=source, position=c, phase=f"Phase {c}", label="step", decode_tokens_per_s=6.1 + c
        )

    counts = (
        queries_for(client, "/published/comparisons/"),
        queries_for(client, f"/published/comparisons/{comparison.pk}/"),
        queries_for(client, "/published/experiments/"),
    )

    # Fixed numbers, the same for 2 and for 20 rows: list 1, detail 2 (+ runs joined), experiments 2 (+ fits).
    assert counts == (1, 2, 2)

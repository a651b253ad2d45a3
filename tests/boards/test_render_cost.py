"""A page's rendering does not grow with its rows beyond a fixed number of
template renders per row (issue 40): each template (an include too) rendered is
counted (Django's ``template_rendered``, sent under test for every render), for
2 and for 20 rows, on the pages of test_query_counts.py. The leaderboard's rows are
written by the fenced cells (speedups/cells.py) with no template per row; a change
that renders an include per cell, or per row, fails here. What it does not see:
tags and filters called inside a template's own loop (the fenced cells and the
benchmarks' CPU-per-request figures watch those)."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from django.test import Client
from django.test.signals import template_rendered

from leaderboard.results.models import Run
from tests.boards.test_query_counts import PAGES, make_runs

pytestmark = pytest.mark.django_db

# Renders a page may add between 2 and 20 rows: a section drawn only when some row has
# its data (the compare page's sweep chart once a run has a sweep). None per row.
SECTIONS_SHOWN = 2


def renders_for(client: Client, url: str) -> Counter[str]:
    counted: Counter[str] = Counter()

    def count(sender: Any, template: Any, **kwargs: Any) -> None:
        counted[template.name or "(string)"] += 1

    template_rendered.connect(count)
    try:
        response = client.get(url)
        if response.streaming:
            b"".join(response.streaming_content)
    finally:
        template_rendered.disconnect(count)
    assert response.status_code == 200, url
    return counted


@pytest.mark.parametrize("page", list(PAGES))
def test_the_template_renders_do_not_grow_with_the_rows(client: Client, board_run, reported_run, page: str) -> None:
    few: list[Run] = make_runs(board_run, reported_run, 2)
    small = renders_for(client, PAGES[page](few))
    many = make_runs(board_run, reported_run, 20)
    large = renders_for(client, PAGES[page](many))

    grown = {name: large[name] - small[name] for name in large if large[name] > small[name]}
    assert sum(grown.values()) <= SECTIONS_SHOWN, f"{page}: renders grew with the rows: {grown}"

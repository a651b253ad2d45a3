"""The pages of what the articles published, loaded by the real importer
(``import_published``) from the transcribed seeds."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from leaderboard.results.models import PublishedComparison, Run
from leaderboard.results.services.published import published_import
from tests.fixtures.boards import figure_in

pytestmark = pytest.mark.django_db


@pytest.fixture
def published(db: None) -> None:
    published_import()


def test_it_lists_the_published_comparisons(client: Client, published) -> None:
    html = client.get("/published/comparisons/").text

    for comparison in PublishedComparison.objects.all():
        assert f'href="/published/comparisons/{comparison.pk}/"' in html


def test_it_shows_seed_002_with_its_cloud_api_row_and_price(client: Client, published) -> None:
    comparison = PublishedComparison.objects.get(title="WOW Moment: Key Findings")

    html = client.get(f"/published/comparisons/{comparison.pk}/").text

    table = html.split('id="published-rows"')[1].split("</table>")[0]
    assert "Claude Haiku" in table and "$150" in table
    assert ">267<" in table and ">171<" in table and ">104<" in table  # as printed
    bars = figure_in(html, "published-bars")
    assert bars["data"][0]["x"][0] == 171
    assert all("t/s" in h for h in bars["data"][0]["hovertext"])


def test_it_shows_seed_003_phases_in_order(client: Client, published) -> None:
    html = client.get("/published/experiments/").text

    phases = re.findall(r"<td>(Phase \d+)</td>", html)
    assert phases[0] == "Phase 3" and phases[-1] == "Phase 12"
    # As printed (29.899), in the table and the chart's hover alike; never rounded to 29.90.
    assert ">29.899<" in html and "29.899 t/s" in html and "29.90" not in html
    assert "490%" in html  # 29.899 / 6.1 of the baseline


def test_reported_runs_rank_on_the_leaderboard_with_their_source(client: Client, published) -> None:
    html = client.get("/?provenance=reported&workload=all").text

    reported = Run.objects.filter(provenance="reported", status="finished", decode_tokens_per_s_mean__isnull=False)
    assert html.count('class="badge reported"') == reported.count()
    assert "Olares One" in html


def test_an_unknown_comparison_is_a_404(client: Client, db) -> None:
    assert client.get("/published/comparisons/99999/").status_code == 404

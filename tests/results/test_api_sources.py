"""GET /api/sources/ and /api/sources/{key}/: what the articles published."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from leaderboard.results.models import (
    PublishedComparison,
    PublishedComparisonRow,
    PublishedExperiment,
    PublishedFit,
    Source,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def source(make_run):
    src = Source.objects.create(key="002.txt", title="Five stacks on one 3090", author_handle="@someone")
    run = make_run()
    table = PublishedComparison.objects.create(key="002-stacks", source=src, title="Stacks")
    PublishedComparisonRow.objects.create(comparison=table, position=2, label="Cloud API", cost_usd_per_mtok=0.6)
    PublishedComparisonRow.objects.create(
        comparison=table, position=1, label="llama.cpp", run=run, decode_tokens_per_s=80
    )
    PublishedExperiment.objects.create(
        source=src, position=1, phase="baseline", label="defaults", decode_tokens_per_s=40
    )
    PublishedFit.objects.create(source=src, name="decode vs ctx", formula="t = a - b*ln(ctx)")
    return src, run


def test_it_lists_sources(api_client, source):
    response = api_client.get("/api/sources/")
    assert response.status_code == 200
    assert [s["key"] for s in response.json()["results"]] == ["002.txt"]


def test_it_shows_a_source_with_its_tables_experiments_and_fits(api_client, source):
    _, run = source
    with CaptureQueriesContext(connection) as ctx:
        response = api_client.get("/api/sources/002.txt/")
    assert response.status_code == 200
    doc = response.json()
    rows = doc["comparisons"][0]["rows"]
    assert [r["label"] for r in rows] == ["llama.cpp", "Cloud API"]
    assert rows[0]["run"] == str(run.uuid)
    assert rows[1]["cost_usd_per_mtok"] == 0.6
    assert doc["experiments"][0]["phase"] == "baseline"
    assert doc["fits"][0]["formula"] == "t = a - b*ln(ctx)"
    assert len(ctx.captured_queries) <= 5

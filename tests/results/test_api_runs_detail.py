"""GET /api/runs/{uuid}/: one run with samples, sweep points, summary and comparison key."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.fixtures.api import api_run_payload, post_json

pytestmark = pytest.mark.django_db


def test_it_shows_a_run_with_its_raw_samples_and_computed_summary(rig_with_token, api_client):
    body = api_run_payload()
    post_json(rig_with_token.client, "/api/runs/", body)
    response = api_client.get(f"/api/runs/{body['uuid']}/")
    assert response.status_code == 200
    doc = response.json()
    assert doc["samples"][0]["decode_tokens_per_s_server"] == 100.0
    assert doc["samples"][0]["acceptance_pct"] == pytest.approx(75.0)
    assert doc["sweep_points"][1]["ctx_label"] == "8K"
    assert doc["summary"]["decode_tokens_per_s_stdev"] == pytest.approx(10.0)
    assert doc["summary"]["summary_source"] == "samples"
    assert doc["summary"]["tokens_per_kwh"] == pytest.approx(6000 / (3600 / 3_600_000))
    assert doc["configuration"]["command_line"].startswith("llama-server")
    assert doc["rig_detail"]["gpus"] == [{"model": "RTX 3090", "vram_gb": 24.0, "count": 1, "power_limit_w": None}]
    assert len(doc["comparison_key"]) == 64


def test_it_costs_the_same_queries_for_3_and_300_samples(rig_with_token, api_client):
    small = api_run_payload()
    big = api_run_payload()
    big["samples"] = [dict(small["samples"][0], index=i) for i in range(1, 301)]
    for body in (small, big):
        assert post_json(rig_with_token.client, "/api/runs/", body).status_code == 201
    counts = []
    for body in (small, big):
        with CaptureQueriesContext(connection) as ctx:
            assert api_client.get(f"/api/runs/{body['uuid']}/").status_code == 200
        counts.append(len(ctx.captured_queries))
    assert counts[0] == counts[1]


def test_it_answers_404_for_an_unknown_uuid(api_client, db):
    response = api_client.get("/api/runs/7d0e6a40-0000-4000-8000-000000000000/")
    assert response.status_code == 404
    assert response.json() == {"errors": {"detail": ["Not found."]}}

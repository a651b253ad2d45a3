"""GET /api/runs/: public, filtered, ordered, paginated, constant in queries."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from leaderboard.results import selectors
from leaderboard.results.models import Run, Source

pytestmark = pytest.mark.django_db
URL = "/api/runs/"


def uuids(response):
    assert response.status_code == 200, response.content[:500]
    return {r["uuid"] for r in response.json()["results"]}


@pytest.fixture
def runs(make_rig, make_run):
    """Five runs that differ in one property each from the first."""
    rig_3090 = make_rig(name="three-090", gpus=[("RTX 3090", 2)])
    rig_5090 = make_rig(name="five-090", gpus=[("RTX 5090", 1), ("RTX 3090 Ti", 1)])
    source = Source.objects.create(key="002.txt", title="Seed 002")
    base = make_run(rig=rig_3090)
    other_build = make_run(rig=rig_3090, stack={"engine": "ik_llama.cpp", "build": "b9999-fff0000"})
    other_model = make_run(
        rig=rig_5090,
        model_file={"name": "Qwen3.6-35B-A3B", "quantization": "UD-Q3_K_XL"},
        configuration={"speculative_type": "mtp", "draft_n_max": 3},
        workload={"name": "long-context", "version": "1"},
        samples=[{"index": 1, "decode_tokens_per_s_server": 250.0}],
    )
    reported = make_run(
        rig=rig_5090,
        run={"uuid": uuid.uuid4(), "status": "finished", "provenance": "reported", "source": source},
        samples=[],
    )
    failed = make_run(rig=rig_3090, run={"uuid": uuid.uuid4(), "status": "failed", "failure_reason": "OOM"}, samples=[])
    Run.objects.filter(pk=failed.pk).update(created_at=timezone.now() - timedelta(days=30))
    return {"base": base, "build": other_build, "model": other_model, "reported": reported, "failed": failed}


def ids(*runs_):
    return {str(r.uuid) for r in runs_}


def test_it_lists_runs_publicly_with_their_summary(api_client, runs):
    response = api_client.get(URL)
    assert uuids(response) == ids(*runs.values())
    assert response.json()["count"] == 5
    row = next(r for r in response.json()["results"] if r["uuid"] == str(runs["base"].uuid))
    assert row["rig"] == "three-090"
    assert row["gpu_summary"] == "2× RTX 3090"
    assert row["stack"]["engine"] == "llama.cpp"
    assert row["summary"]["decode_tokens_per_s_mean"] == pytest.approx(100.0)
    assert row["comparison_key"] == runs["base"].comparison_key
    assert "samples" not in row


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("rig=five-090", ["model", "reported"]),
        ("gpu=3090 ti", ["model", "reported"]),
        ("gpu=rtx 3090", ["base", "build", "model", "reported", "failed"]),
        ("engine=ik_llama.cpp", ["build"]),
        ("build=fff0000", ["build"]),
        ("model=qwen3.6", ["model"]),
        ("quantization=ud-q3_k_xl", ["model"]),
        ("speculative_type=mtp", ["model"]),
        ("workload=long-context", ["model"]),
        ("provenance=reported", ["reported"]),
        ("status=failed", ["failed"]),
        ("source=002.txt", ["reported"]),
        ("engine=llama.cpp&status=finished&rig=three-090", ["base"]),
    ],
)
def test_it_filters_runs(api_client, runs, query, expected):
    assert uuids(api_client.get(f"{URL}?{query}")) == ids(*(runs[k] for k in expected))


def test_it_filters_by_creation_date(api_client, runs):
    cutoff = (timezone.now() - timedelta(days=1)).isoformat()
    assert uuids(api_client.get(URL, {"created_after": cutoff})) == ids(
        runs["base"], runs["build"], runs["model"], runs["reported"]
    )
    assert uuids(api_client.get(URL, {"created_before": cutoff})) == ids(runs["failed"])


def test_it_names_a_bad_filter_value(api_client, runs):
    response = api_client.get(URL, {"engine": "turbo", "created_after": "yesterday"})
    assert response.status_code == 400
    assert set(response.json()["errors"]) == {"engine", "created_after"}


def test_it_orders_by_decode_speed_with_runs_without_figures_last(api_client, runs):
    fastest_first = [
        r["uuid"] for r in api_client.get(URL, {"ordering": "-decode_tokens_per_s_mean"}).json()["results"]
    ]
    assert fastest_first[0] == str(runs["model"].uuid)
    assert set(fastest_first[-2:]) == ids(runs["reported"], runs["failed"])
    slowest_first = [r["uuid"] for r in api_client.get(URL, {"ordering": "decode_tokens_per_s_mean"}).json()["results"]]
    assert slowest_first[-1] != str(runs["model"].uuid)
    assert set(slowest_first[-2:]) == ids(runs["reported"], runs["failed"])


def test_it_lists_the_newest_first_by_default(api_client, runs):
    assert api_client.get(URL).json()["results"][-1]["uuid"] == str(runs["failed"].uuid)


def test_it_paginates(api_client, runs):
    first = api_client.get(URL, {"page_size": 2}).json()
    second = api_client.get(URL, {"page_size": 2, "page": 2}).json()
    assert first["count"] == 5 and len(first["results"]) == 2 and first["next"]
    assert not {r["uuid"] for r in first["results"]} & {r["uuid"] for r in second["results"]}
    assert api_client.get(URL, {"page": 99}).status_code == 404


def count_list_queries(api_client):
    with CaptureQueriesContext(connection) as ctx:
        response = api_client.get(URL, {"page_size": 50})
    assert response.status_code == 200
    return len(ctx.captured_queries), len(response.json()["results"])


def test_the_list_costs_the_same_queries_for_2_and_20_runs(api_client, make_rig, make_run):
    rigs = [make_rig(name=f"rig-{i}", gpus=[("RTX 3090", 1), ("RTX 4090", 2)]) for i in range(2)]
    for i in range(2):
        make_run(rig=rigs[i % 2], model_file={"name": f"model-{i}"})
    few, n_few = count_list_queries(api_client)
    for i in range(2, 20):
        make_run(rig=rigs[i % 2], stack={"engine": "llama.cpp", "build": f"b{i}"}, model_file={"name": f"model-{i}"})
    many, n_many = count_list_queries(api_client)
    assert (n_few, n_many) == (2, 20)
    assert few == many
    assert many <= 3  # count, page, GPUs


def test_the_count_stops_at_the_cap_and_pages_past_it_are_served(rig_with_token, monkeypatch):
    from rest_framework.test import APIClient

    from leaderboard.core.api.pagination import CappedPaginator
    from tests.fixtures.api import api_run_payload, post_json

    for _ in range(5):
        assert post_json(rig_with_token.client, "/api/runs/", api_run_payload()).status_code == 201
    monkeypatch.setattr(CappedPaginator, "COUNT_CAP", 3)
    first = APIClient().get("/api/runs/", {"page_size": 2}).json()
    assert (first["count"], first["count_capped"]) == (3, True)
    assert first["next"] is not None
    third = APIClient().get("/api/runs/", {"page_size": 2, "page": 3}).json()  # past the counted 3
    assert len(third["results"]) == 1
    assert third["next"] is None
    seen = {
        r["uuid"]
        for page in (1, 2, 3)
        for r in APIClient().get("/api/runs/", {"page_size": 2, "page": page}).json()["results"]
    }
    assert len(seen) == 5
    monkeypatch.setattr(CappedPaginator, "COUNT_CAP", 10)
    exact = APIClient().get("/api/runs/").json()
    assert (exact["count"], exact["count_capped"]) == (5, False)


def test_the_list_leaves_unread_what_its_rows_do_not_show(api_client, monkeypatch, runs):
    """A list row shows no log tail, fingerprint or notes: the page's SQL does not
    read them (a runner's log tail is up to 20,000 characters a run), and the
    answer is the one the full read (run_list().public()) gives."""
    Run.objects.update(
        server_log_tail="x" * 20_000, fingerprint={"gpu": "RTX 3090"}, extra={"k": 1}, notes="not listed"
    )
    with CaptureQueriesContext(connection) as ctx:
        answer = api_client.get(URL, {"page_size": 50})
    page_sql = next(q["sql"] for q in ctx.captured_queries if '"results_run"."uuid"' in q["sql"])
    for column in ("server_log_tail", "fingerprint", "extra", "notes", "updated_at"):
        assert f'"results_run"."{column}"' not in page_sql
    assert '"results_rig"."notes"' not in page_sql and '"results_configuration"."ctx_size"' not in page_sql
    assert '"results_rig"."name"' in page_sql and '"results_configuration"."speculative_type"' in page_sql

    monkeypatch.setattr(selectors, "run_list_public", lambda: selectors.run_list().public())
    with CaptureQueriesContext(connection) as full_ctx:
        full = api_client.get(URL, {"page_size": 50})
    full_sql = next(q["sql"] for q in full_ctx.captured_queries if '"results_run"."uuid"' in q["sql"])
    assert '"results_run"."server_log_tail"' in full_sql  # the reference reads them: the check can fail
    assert answer.content == full.content and len(answer.json()["results"]) == 5
    assert len(ctx.captured_queries) == len(full_ctx.captured_queries)

"""Concurrency levels through the API: stored with their raw requests, the
statistics computed by the service (not taken from the client), bad input a 400
naming the field, and levels added when an open run is finished."""

from __future__ import annotations

import statistics

import pytest

from leaderboard.results.models import ConcurrencyLevel, ConcurrencyRequest, Run
from tests.fixtures.api import api_run_payload, post_json
from tests.fixtures.concurrency import level_payload

pytestmark = pytest.mark.django_db
URL = "/api/runs/"


def _inclusive(values, q):
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


def test_it_stores_levels_with_their_requests_and_computes_the_statistics(rig_with_token):
    levels = [level_payload(1, 50.0, energy_j=40.0), level_payload(4, 30.0, draft=(20, 15), energy_j=100.0)]
    levels[1]["output_tokens_per_s"] = 1e9  # a client's own figure is not a stored one
    body = api_run_payload(concurrency_levels=levels)
    response = post_json(rig_with_token.client, URL, body)
    assert response.status_code == 201, response.content[:500]
    stored = response.json()["concurrency_levels"]
    assert [lv["concurrency"] for lv in stored] == [1, 4]
    four = stored[1]
    raw = levels[1]["requests"]
    assert len(four["requests"]) == 8 and four["requests"][0]["itl_ms"] == raw[0]["itl_ms"]
    tokens = sum(r["tokens_generated"] for r in raw)
    span = max(r["ended_s"] for r in raw) - min(r["started_s"] for r in raw)
    assert four["output_tokens_per_s"] == pytest.approx(tokens / span)
    assert four["requests_per_s"] == pytest.approx(8 / span)
    decode = [r["decode_tokens_per_s_server"] for r in raw]
    assert four["decode_tokens_per_s_mean"] == pytest.approx(statistics.fmean(decode))
    for q in (50, 90, 99):
        assert four[f"decode_tokens_per_s_p{q}"] == pytest.approx(_inclusive(decode, q))
        assert four[f"ttft_ms_p{q}"] == pytest.approx(_inclusive([r["ttft_ms"] for r in raw], q))
    gaps = [g for r in raw for g in r["itl_ms"]]
    assert four["itl_ms_p99"] == pytest.approx(_inclusive(gaps, 99))
    assert four["acceptance_pct"] == pytest.approx(75.0)
    assert four["energy_j_per_token"] == pytest.approx(100.0 / tokens)
    assert four["stats_reasons"] == {}
    assert ConcurrencyRequest.objects.filter(level__run__uuid=body["uuid"]).count() == 2 + 8
    # Read back, the same document.
    detail = rig_with_token.client.get(f"{URL}{body['uuid']}/").json()
    assert detail["concurrency_levels"] == stored


def test_a_level_of_one_request_keeps_its_percentiles_empty_with_the_reason(rig_with_token):
    body = api_run_payload(concurrency_levels=[level_payload(1, 50.0, n_requests=1)])
    response = post_json(rig_with_token.client, URL, body)
    assert response.status_code == 201
    level = ConcurrencyLevel.objects.get()
    assert level.ttft_ms_p50 is None and level.decode_tokens_per_s_p90 is None
    assert level.stats_reasons["ttft_ms_p90"] == "p90 of TTFT needs at least 2 values, got 1"
    assert level.stats_reasons["energy_j_per_token"] == "no energy reading (no NVML)"
    assert level.output_tokens_per_s is not None and level.itl_ms_p99 is not None  # 63 gaps


@pytest.mark.parametrize(
    ("change", "field", "why"),
    [
        (lambda lv: lv.update(concurrency=0), "concurrency_levels.0.concurrency", "greater than or equal to 1"),
        (lambda lv: lv.update(n_requests=-2), "concurrency_levels.0.n_requests", "greater than or equal to 1"),
        (lambda lv: lv.update(concurrency="4"), "concurrency_levels.0.concurrency", "A number is required"),
        (lambda lv: lv["requests"][0].update(stream=9), "concurrency_levels.0.requests", "beyond the level's 2"),
        (lambda lv: lv["requests"][1].update(index=1), "concurrency_levels.0.requests.1.index", "Duplicate index"),
        (lambda lv: lv["requests"][0].update(itl_ms=[1.0, -3.0]), "concurrency_levels.0.requests.0.itl_ms", "Item 1"),
        (lambda lv: lv["requests"][0].update(itl_ms="fast"), "concurrency_levels.0.requests.0.itl_ms", "list"),
        (lambda lv: lv["requests"][0].update(draft_n=3, draft_n_accepted=4),
         "concurrency_levels.0.requests.0.draft_n_accepted", "exceed"),
        (lambda lv: lv["requests"][0].update(ended_s=-1.0), "concurrency_levels.0.requests.0.ended_s", "greater"),
        (lambda lv: lv.update(n_requests=1), "concurrency_levels.0.requests", "more than n_requests"),
    ],
)  # fmt: skip
def test_bad_levels_get_a_400_naming_the_field_and_nothing_is_stored(rig_with_token, change, field, why):
    level = level_payload(2, 40.0)
    change(level)
    response = post_json(rig_with_token.client, URL, api_run_payload(concurrency_levels=[level]))
    assert response.status_code == 400, response.content[:300]
    errors = response.json()["errors"]
    assert field in errors, errors
    assert any(why in message for message in errors[field]), errors[field]
    assert Run.objects.count() == 0 and ConcurrencyLevel.objects.count() == 0


def test_a_level_given_twice_is_refused(rig_with_token):
    body = api_run_payload(concurrency_levels=[level_payload(2, 40.0), level_payload(2, 35.0)])
    errors = post_json(rig_with_token.client, URL, body).json()["errors"]
    assert "Duplicate concurrency 2" in errors["concurrency_levels.1.concurrency"][0]


def test_a_samples_inter_token_gaps_are_stored(rig_with_token):
    body = api_run_payload()
    body["samples"][0]["itl_ms"] = [10.5, 11.0, 9.75]
    response = post_json(rig_with_token.client, URL, body)
    assert response.status_code == 201
    assert response.json()["samples"][0]["itl_ms"] == [10.5, 11.0, 9.75]
    assert response.json()["samples"][1]["itl_ms"] == []


def test_finishing_an_open_run_adds_its_levels_once(rig_with_token):
    body = api_run_payload(status="running", samples=[])
    assert post_json(rig_with_token.client, URL, body).status_code == 201
    finish = {
        "status": "finished",
        "samples": api_run_payload()["samples"],
        "concurrency_levels": [level_payload(2, 40.0)],
    }
    url = f"{URL}{body['uuid']}/finish/"
    assert post_json(rig_with_token.client, url, finish).status_code == 200
    # A retried whole POST of the same run adds nothing twice.
    again = api_run_payload(uuid=body["uuid"], concurrency_levels=[level_payload(2, 40.0)])
    assert post_json(rig_with_token.client, URL, again).status_code == 200
    assert ConcurrencyLevel.objects.count() == 1 and ConcurrencyRequest.objects.count() == 4

"""POST /api/runs/{uuid}/samples/: adding samples to a running run."""

from __future__ import annotations

import pytest

from leaderboard.results.models import Run, Sample, SweepPoint
from tests.fixtures.api import api_run_payload, post_json

pytestmark = pytest.mark.django_db


def open_run(rig_with_token):
    body = api_run_payload(status="running", samples=[], sweep_points=[], finished_at=None)
    assert post_json(rig_with_token.client, "/api/runs/", body).status_code == 201
    return body


def sample(index, tps=100.0):
    return {
        "index": index,
        "decode_tokens_per_s_server": tps,
        "tokens_generated": 100,
        "draft_n": 10,
        "draft_n_accepted": 5,
    }


def test_it_appends_samples_and_recomputes_the_summary(rig_with_token):
    body = open_run(rig_with_token)
    url = f"/api/runs/{body['uuid']}/samples/"
    first = post_json(rig_with_token.client, url, {"samples": [sample(1, 100.0)]})
    assert first.status_code == 200, first.json()
    assert first.json()["summary"]["n_samples"] == 1
    second = post_json(
        rig_with_token.client, url, {"samples": [sample(2, 110.0)], "sweep_points": [{"ctx_tokens": 4096}]}
    )
    assert second.status_code == 200
    doc = second.json()
    assert doc["status"] == "running"
    assert [s["index"] for s in doc["samples"]] == [1, 2]
    assert doc["summary"]["decode_tokens_per_s_mean"] == pytest.approx(105.0)
    run = Run.objects.get(uuid=body["uuid"])
    assert run.n_samples == 2 and run.decode_tokens_per_s_mean == pytest.approx(105.0)
    assert list(run.samples.values_list("index", flat=True)) == [1, 2]
    assert run.sweep_points.count() == 1


def test_a_retried_append_adds_nothing_twice(rig_with_token):
    body = open_run(rig_with_token)
    url = f"/api/runs/{body['uuid']}/samples/"
    payload = {"samples": [sample(1), sample(2)], "sweep_points": [{"ctx_tokens": 4096}]}
    assert post_json(rig_with_token.client, url, payload).status_code == 200
    retry = post_json(rig_with_token.client, url, payload)
    assert retry.status_code == 200
    assert len(retry.json()["samples"]) == 2
    assert Sample.objects.count() == 2
    assert SweepPoint.objects.count() == 1


def test_only_the_owning_rig_may_append(rig_with_token, make_rig_with_token, api_client):
    body = open_run(rig_with_token)
    url = f"/api/runs/{body['uuid']}/samples/"
    other = make_rig_with_token(name="other-rig")
    response = post_json(other.client, url, {"samples": [sample(1)]})
    assert response.status_code == 403
    assert "belongs to rig 'api-rig'" in response.json()["errors"]["detail"][0]
    assert post_json(api_client, url, {"samples": [sample(1)]}).status_code == 401
    assert Sample.objects.count() == 0


def test_it_validates_appended_samples_naming_the_field(rig_with_token):
    body = open_run(rig_with_token)
    bad = sample(2)
    bad["draft_n_accepted"] = 50
    response = post_json(rig_with_token.client, f"/api/runs/{body['uuid']}/samples/", {"samples": [sample(1), bad]})
    assert response.status_code == 400
    assert list(response.json()["errors"]) == ["samples.1.draft_n_accepted"]
    assert Sample.objects.count() == 0


def test_it_refuses_to_append_to_a_finished_run(rig_with_token):
    body = api_run_payload()
    post_json(rig_with_token.client, "/api/runs/", body)
    response = post_json(rig_with_token.client, f"/api/runs/{body['uuid']}/samples/", {"samples": [sample(9)]})
    assert response.status_code == 409
    assert response.json() == {"errors": {"status": ["run is finished, not running"]}}
    assert Sample.objects.count() == 3


def test_it_answers_404_for_an_unknown_run(rig_with_token):
    response = post_json(rig_with_token.client, "/api/runs/7d0e6a40-0000-4000-8000-000000000000/samples/", {})
    assert response.status_code == 404
    assert "errors" in response.json()

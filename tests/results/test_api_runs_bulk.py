"""POST /api/runs/bulk/: many runs of one rig in one request, each answered on its own."""

from __future__ import annotations

import json
import uuid

import pytest

from leaderboard.results.models import Run, Sample, SweepPoint
from tests.fixtures.api import api_run_payload, post_json

pytestmark = pytest.mark.django_db
URL = "/api/runs/bulk/"


def _counts() -> tuple[int, int, int]:
    return Run.objects.count(), Sample.objects.count(), SweepPoint.objects.count()


def test_it_stores_every_run_of_a_batch_with_its_samples_and_summary(rig_with_token):
    bodies = [api_run_payload() for _ in range(3)]
    response = post_json(rig_with_token.client, URL, {"runs": bodies})
    assert response.status_code == 200, response.json()
    doc = response.json()
    assert (doc["created"], doc["already_stored"], doc["refused"]) == (3, 0, 0)
    assert [r["uuid"] for r in doc["runs"]] == [b["uuid"] for b in bodies]
    assert [r["status"] for r in doc["runs"]] == [201, 201, 201]
    assert doc["runs"][0]["url"] == f"/api/runs/{bodies[0]['uuid']}/"
    assert _counts() == (3, 9, 6)
    run = Run.objects.get(uuid=bodies[1]["uuid"])
    assert run.rig == rig_with_token.rig
    assert run.provenance == "measured"
    assert run.n_samples == 3
    assert run.decode_tokens_per_s_mean == pytest.approx(110.0)
    assert list(run.samples.values_list("index", flat=True)) == [1, 2, 3]
    # The stored run reads back as one POSTed alone does.
    detail = rig_with_token.client.get(doc["runs"][1]["url"]).json()
    assert detail["summary"]["acceptance_pct"] == pytest.approx(75.0)
    assert len(detail["comparison_key"]) == 64


def test_a_repeated_batch_stores_nothing_twice(rig_with_token):
    batch = {"runs": [api_run_payload() for _ in range(2)]}
    assert post_json(rig_with_token.client, URL, batch).json()["created"] == 2
    counts = _counts()
    again = post_json(rig_with_token.client, URL, batch).json()
    assert (again["created"], again["already_stored"]) == (0, 2)
    assert [r["status"] for r in again["runs"]] == [200, 200]
    assert _counts() == counts


def test_a_mixed_batch_answers_each_run_and_a_bad_run_blocks_no_other(rig_with_token):
    stored = api_run_payload()
    assert post_json(rig_with_token.client, "/api/runs/", stored).status_code == 201
    bad = api_run_payload()
    bad["samples"][1]["draft_n_accepted"] = 99999
    new = api_run_payload()
    repeated = api_run_payload()
    runs = [new, stored, bad, {"uuid": "not a uuid"}, repeated, repeated, "not an object"]
    doc = post_json(rig_with_token.client, URL, {"runs": runs}).json()
    statuses = [(r["index"], r["status"], r["result"]) for r in doc["runs"]]
    assert statuses == [
        (0, 201, "created"),
        (1, 200, "already stored"),
        (2, 400, "refused"),
        (3, 400, "refused"),
        (4, 201, "created"),
        (5, 200, "already stored"),
        (6, 400, "refused"),
    ]
    assert "runs.2.samples.1.draft_n_accepted" in doc["runs"][2]["errors"]
    assert doc["runs"][2]["uuid"] == bad["uuid"]
    assert "runs.3.uuid" in doc["runs"][3]["errors"]
    assert doc["runs"][3]["uuid"] is None  # not a uuid: none is named
    assert "runs.6.body" in doc["runs"][6]["errors"]
    # Nothing of the refused run is stored; the others whole.
    assert not Run.objects.filter(uuid=bad["uuid"]).exists()
    assert _counts() == (3, 9, 6)


def test_a_non_finite_number_refuses_only_its_run(rig_with_token):
    good = api_run_payload()
    text = json.dumps({"runs": [api_run_payload(), good]})
    text = text.replace('"ttft_ms": 95.0', '"ttft_ms": NaN', 1)  # the first run's first sample
    response = rig_with_token.client.post(URL, data=text, content_type="application/json")
    doc = response.json()
    assert response.status_code == 200, doc
    assert doc["runs"][0]["status"] == 400
    assert list(doc["runs"][0]["errors"]) == ["runs.0.samples.0.ttft_ms"]
    assert doc["runs"][1]["status"] == 201
    assert list(Run.objects.values_list("uuid", flat=True)) == [uuid.UUID(good["uuid"])]


def test_another_rigs_uuid_is_refused_with_409_for_that_run_only(rig_with_token, make_rig_with_token):
    other = make_rig_with_token("other-rig")
    theirs = api_run_payload(rig="other-rig")
    assert post_json(other.client, "/api/runs/", theirs).status_code == 201
    mine = api_run_payload()
    doc = post_json(rig_with_token.client, URL, {"runs": [{**theirs, "rig": "api-rig"}, mine]}).json()
    assert [r["status"] for r in doc["runs"]] == [409, 201]
    assert "runs.0.uuid" in doc["runs"][0]["errors"]
    assert Run.objects.get(uuid=theirs["uuid"]).rig == other.rig


def test_a_run_naming_another_rig_is_refused_with_403_and_a_missing_rig_is_the_tokens(rig_with_token):
    claimed = api_run_payload(rig="someone-else")
    unnamed = api_run_payload()
    del unnamed["rig"]
    doc = post_json(rig_with_token.client, URL, {"runs": [claimed, unnamed]}).json()
    assert [r["status"] for r in doc["runs"]] == [403, 201]
    assert "runs.0.rig" in doc["runs"][0]["errors"]
    assert Run.objects.get(uuid=unnamed["uuid"]).rig == rig_with_token.rig


def test_a_bulk_document_finishes_an_open_run_as_post_does(rig_with_token):
    body = api_run_payload(status="running", samples=api_run_payload()["samples"][:1], sweep_points=[])
    assert post_json(rig_with_token.client, "/api/runs/", body).status_code == 201
    whole = api_run_payload(uuid=body["uuid"])
    doc = post_json(rig_with_token.client, URL, {"runs": [whole]}).json()
    assert doc["runs"][0]["status"] == 200
    run = Run.objects.get(uuid=body["uuid"])
    assert run.status == "finished"
    assert run.n_samples == 3
    assert run.sweep_points.count() == 2


def test_it_refuses_an_empty_or_missing_list_and_too_many_runs(rig_with_token, settings):
    for body in ({}, {"runs": []}, {"runs": "x"}):
        response = post_json(rig_with_token.client, URL, body)
        assert response.status_code == 400
        assert "runs" in response.json()["errors"]
    assert post_json(rig_with_token.client, URL, []).status_code == 400
    settings.RIGBOARD_MAX_BULK_RUNS = 2
    response = post_json(rig_with_token.client, URL, {"runs": [api_run_payload() for _ in range(3)]})
    assert response.status_code == 400
    assert "no more than 2" in response.json()["errors"]["runs"][0]
    assert Run.objects.count() == 0


def test_it_refuses_a_body_over_its_own_limit_with_413(rig_with_token, settings):
    body = {"runs": [api_run_payload() for _ in range(3)]}
    settings.RIGBOARD_MAX_BULK_BODY_BYTES = len(json.dumps(body)) - 1
    settings.RIGBOARD_MAX_BODY_BYTES = 10 * len(json.dumps(body))
    assert post_json(rig_with_token.client, URL, body).status_code == 413
    assert Run.objects.count() == 0


def test_it_needs_a_rig_token(api_client):
    assert post_json(api_client, URL, {"runs": [api_run_payload()]}).status_code == 401
    assert Run.objects.count() == 0

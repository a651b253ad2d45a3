"""POST /api/runs/{uuid}/finish/: closing a running run, keeping its samples."""

from __future__ import annotations

import pytest

from leaderboard.results.models import Run, Sample
from tests.fixtures.api import api_run_payload, post_json

pytestmark = pytest.mark.django_db


def open_run_with_samples(rig_with_token, n=2):
    body = api_run_payload(status="running", finished_at=None)
    body["samples"] = body["samples"][:n]
    assert post_json(rig_with_token.client, "/api/runs/", body).status_code == 201
    return body


def test_a_run_failing_half_way_keeps_its_samples(rig_with_token):
    body = open_run_with_samples(rig_with_token)
    response = post_json(
        rig_with_token.client,
        f"/api/runs/{body['uuid']}/finish/",
        {"status": "failed", "failure_reason": "llama-server exited with 139", "server_log_tail": "segfault\n"},
    )
    assert response.status_code == 200, response.json()
    doc = response.json()
    assert doc["status"] == "failed"
    assert doc["failure_reason"] == "llama-server exited with 139"
    assert doc["server_log_tail"] == "segfault\n"
    assert doc["summary"]["n_samples"] == 2
    run = Run.objects.get(uuid=body["uuid"])
    assert run.status == "failed" and run.finished_at is not None
    assert run.failure_reason == "llama-server exited with 139"
    assert run.server_log_tail == "segfault\n"
    assert Sample.objects.filter(run=run).count() == 2
    assert run.decode_tokens_per_s_mean == pytest.approx(105.0)


def test_it_finishes_a_run_with_its_last_samples(rig_with_token):
    body = open_run_with_samples(rig_with_token, n=0)
    last = api_run_payload()["samples"]
    response = post_json(
        rig_with_token.client, f"/api/runs/{body['uuid']}/finish/", {"status": "finished", "samples": last}
    )
    assert response.status_code == 200
    run = Run.objects.get(uuid=body["uuid"])
    assert run.status == "finished" and run.n_samples == 3
    assert run.decode_tokens_per_s_mean == pytest.approx(110.0)


def test_a_retried_finish_returns_the_run_unchanged(rig_with_token):
    body = open_run_with_samples(rig_with_token)
    url = f"/api/runs/{body['uuid']}/finish/"
    first = post_json(rig_with_token.client, url, {"status": "aborted", "failure_reason": "ctrl-c"})
    again = post_json(rig_with_token.client, url, {"status": "aborted", "failure_reason": "something else"})
    assert first.status_code == again.status_code == 200
    assert again.json()["failure_reason"] == "ctrl-c"
    assert Run.objects.get(uuid=body["uuid"]).failure_reason == "ctrl-c"


def test_a_finish_or_whole_post_of_a_run_ended_the_same_way_adds_only_the_samples_it_lacks(rig_with_token):
    # The finish raced the whole document (or an earlier finish carried fewer):
    # what was measured is kept; the status, reason and times stay as first stored.
    body = open_run_with_samples(rig_with_token, n=1)
    url = f"/api/runs/{body['uuid']}/finish/"
    assert post_json(rig_with_token.client, url, {"status": "finished"}).status_code == 200
    ended_at = Run.objects.get(uuid=body["uuid"]).finished_at
    samples = api_run_payload()["samples"]
    again = post_json(rig_with_token.client, url, {"status": "finished", "samples": samples[:2]})
    whole = post_json(rig_with_token.client, "/api/runs/", {**body, "status": "finished", "samples": samples})
    assert again.status_code == whole.status_code == 200
    assert [s["index"] for s in again.json()["samples"]] == [1, 2]
    assert [s["index"] for s in whole.json()["samples"]] == [1, 2, 3]
    run = Run.objects.get(uuid=body["uuid"])
    assert run.status == "finished" and run.finished_at == ended_at
    assert run.n_samples == 3 and run.decode_tokens_per_s_mean == pytest.approx(110.0)


def test_it_refuses_to_finish_a_run_again_with_another_status(rig_with_token):
    body = open_run_with_samples(rig_with_token)
    url = f"/api/runs/{body['uuid']}/finish/"
    post_json(rig_with_token.client, url, {"status": "finished"})
    response = post_json(rig_with_token.client, url, {"status": "failed", "failure_reason": "late"})
    assert response.status_code == 409
    assert Run.objects.get(uuid=body["uuid"]).status == "finished"


def test_it_refuses_to_finish_as_finished_a_run_without_samples(rig_with_token):
    body = open_run_with_samples(rig_with_token, n=0)
    response = post_json(rig_with_token.client, f"/api/runs/{body['uuid']}/finish/", {"status": "finished"})
    assert response.status_code == 400
    assert list(response.json()["errors"]) == ["samples"]
    assert Run.objects.get(uuid=body["uuid"]).status == "running"


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"status": "running"}, "status"),
        ({"status": "done"}, "status"),
        ({}, "status"),
        ({"status": "failed"}, "failure_reason"),
    ],
)
def test_it_names_a_bad_status_or_missing_reason(rig_with_token, payload, field):
    body = open_run_with_samples(rig_with_token)
    response = post_json(rig_with_token.client, f"/api/runs/{body['uuid']}/finish/", payload)
    assert response.status_code == 400
    assert list(response.json()["errors"]) == [field]
    assert Run.objects.get(uuid=body["uuid"]).status == "running"


def test_only_the_owning_rig_may_finish(rig_with_token, make_rig_with_token):
    body = open_run_with_samples(rig_with_token)
    other = make_rig_with_token(name="other-rig")
    response = post_json(other.client, f"/api/runs/{body['uuid']}/finish/", {"status": "aborted"})
    assert response.status_code == 403
    assert Run.objects.get(uuid=body["uuid"]).status == "running"


def test_a_full_post_completes_a_running_run_with_the_samples_it_lacks(rig_with_token):
    # The runner opened the run and appended 2 samples; its close was spooled as the whole run.
    body = open_run_with_samples(rig_with_token, n=2)
    whole = {**body, "status": "finished", "samples": api_run_payload()["samples"], "server_log_tail": "done\n"}
    whole["finished_at"] = api_run_payload()["finished_at"]
    response = post_json(rig_with_token.client, "/api/runs/", whole)
    assert response.status_code == 200, response.json()
    doc = response.json()
    assert doc["status"] == "finished"
    assert doc["summary"]["n_samples"] == 3
    run = Run.objects.get(uuid=body["uuid"])
    assert run.status == "finished" and run.server_log_tail == "done\n"
    assert sorted(Sample.objects.filter(run=run).values_list("index", flat=True)) == [1, 2, 3]
    assert Run.objects.filter(uuid=body["uuid"]).count() == 1
    assert run.decode_tokens_per_s_mean == pytest.approx(110.0)


def test_a_full_post_of_an_ended_run_changes_nothing(rig_with_token):
    body = open_run_with_samples(rig_with_token, n=2)
    post_json(rig_with_token.client, f"/api/runs/{body['uuid']}/finish/", {"status": "aborted"})
    whole = {**body, "status": "finished", "samples": api_run_payload()["samples"]}
    response = post_json(rig_with_token.client, "/api/runs/", whole)
    assert response.status_code == 200
    run = Run.objects.get(uuid=body["uuid"])
    assert run.status == "aborted" and Sample.objects.filter(run=run).count() == 2


def test_a_repeated_open_adds_the_samples_the_running_run_lacks_and_leaves_it_running(rig_with_token):
    # An open the runner sent again (the first got through unanswered) with what it
    # measured meanwhile: the answer shows every sample it carried, stored once.
    body = open_run_with_samples(rig_with_token, n=1)
    again = {**body, "samples": api_run_payload()["samples"]}
    response = post_json(rig_with_token.client, "/api/runs/", again)
    assert response.status_code == 200
    assert [s["index"] for s in response.json()["samples"]] == [1, 2, 3]
    run = Run.objects.get(uuid=body["uuid"])
    assert run.status == "running" and Sample.objects.filter(run=run).count() == 3


def test_finish_replaces_the_fingerprint_and_merges_extra(rig_with_token):
    body = open_run_with_samples(rig_with_token, n=1)
    body_extra = {"opened": True}
    Run.objects.filter(uuid=body["uuid"]).update(extra=body_extra)
    response = post_json(
        rig_with_token.client,
        f"/api/runs/{body['uuid']}/finish/",
        {"status": "finished", "fingerprint": {"gpus": []}, "extra": {"cached_prompt_tokens": [0, 0]}},
    )
    assert response.status_code == 200, response.json()
    run = Run.objects.get(uuid=body["uuid"])
    assert run.fingerprint == {"gpus": []}
    assert run.extra == {"opened": True, "cached_prompt_tokens": [0, 0]}
    assert response.json()["extra"] == run.extra


def test_a_full_post_completing_a_run_carries_its_extra(rig_with_token):
    body = open_run_with_samples(rig_with_token, n=1)
    whole = {**body, "status": "finished", "extra": {"tokens_generated_source": "usage"}}
    assert post_json(rig_with_token.client, "/api/runs/", whole).status_code == 200
    assert Run.objects.get(uuid=body["uuid"]).extra["tokens_generated_source"] == "usage"

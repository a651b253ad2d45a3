"""POST /api/campaigns/, /trials/, /finish/ and GET /api/campaigns/<id>/: a rig's
token opens its own campaign; bad input is a 400 naming the field."""

from __future__ import annotations

import uuid

import pytest

from leaderboard.campaigns.models import Campaign, Trial
from tests.fixtures.api import post_json

pytestmark = pytest.mark.django_db

SPACE = {"threads": [1, 2, 4], "ctx_size": [2048, 20000000]}


def body(**overrides):
    data = {
        "name": "gemma threads",
        "strategy": "grid",
        "space": SPACE,
        "budget": {"trials": 6},
        "repetitions": 1,
        "base_config": {"server": {"model": "/models/gemma.gguf", "threads": 2}, "workload": {"max_tokens": 16}},
    }
    data.update(overrides)
    return data


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"space": {"threads": [1], "nonsense": [1]}}, "space.nonsense"),
        ({"space": {"threads": []}}, "space.threads"),
        ({"space": {"threads": {"min": 1, "max": 8, "step": 0}}}, "space.threads.step"),
        ({"budget": {"trials": 0}}, "budget.trials"),
        ({"constraints": [{"metric": "joy", "min": 1}]}, "constraints.0.metric"),
        ({"base_config": {"server": {"model": "/m.gguf", "threads": "many"}}}, "base_config.server.threads"),
    ],
)
def test_it_rejects_bad_input_naming_the_field(rig_with_token, overrides, field):
    response = post_json(rig_with_token.client, "/api/campaigns/", body(**overrides))
    assert response.status_code == 400, response.json()
    assert field in response.json()["errors"]
    assert Campaign.objects.count() == 0


def test_a_rig_opens_a_campaign_records_trials_and_closes_it(rig_with_token, make_rig_with_token):
    response = post_json(rig_with_token.client, "/api/campaigns/", body())
    assert response.status_code == 201, response.json()
    campaign_id = response.json()["id"]
    campaign = Campaign.objects.get(pk=campaign_id)
    assert campaign.rig == rig_with_token.rig and campaign.spec["space"] == SPACE

    trial = {"number": 1, "params": {"threads": 2, "ctx_size": 2048}, "state": "complete", "value": 41.5,
             "samples": [41.0, 42.0], "run_uuid": str(uuid.uuid4()), "duration_s": 9.0, "measured_s": 2.0}  # fmt: skip
    assert post_json(rig_with_token.client, f"/api/campaigns/{campaign_id}/trials/", trial).status_code == 201
    assert post_json(rig_with_token.client, f"/api/campaigns/{campaign_id}/trials/", trial).status_code == 200
    failed = {"number": 2, "params": {"threads": 2, "ctx_size": 20000000}, "state": "failed",
              "failure_kind": "out_of_memory", "failure_reason": "failed to allocate", "log_tail": "..."}  # fmt: skip
    assert post_json(rig_with_token.client, f"/api/campaigns/{campaign_id}/trials/", failed).status_code == 201
    assert Trial.objects.filter(campaign=campaign).count() == 2
    assert Trial.objects.get(campaign=campaign, number=1).overhead_s == pytest.approx(7.0)

    outsider = make_rig_with_token("other-rig")
    third = {**trial, "number": 3}
    assert post_json(outsider.client, f"/api/campaigns/{campaign_id}/trials/", third).status_code == 403
    bad = {**third, "params": {"threads": 3, "ctx_size": 2048}}
    response = post_json(rig_with_token.client, f"/api/campaigns/{campaign_id}/trials/", bad)
    assert response.status_code == 400 and "params.threads" in response.json()["errors"]

    finish = {"status": "finished"}
    assert post_json(rig_with_token.client, f"/api/campaigns/{campaign_id}/finish/", finish).status_code == 200
    detail = rig_with_token.client.get(f"/api/campaigns/{campaign_id}/").json()
    assert detail["status"] == "finished"
    assert [t["state"] for t in detail["trials"]] == ["complete", "failed"]
    assert detail["analysis"]["best"]["params"] == {"threads": 2, "ctx_size": 2048}
    assert "--ctx-size 2048" in detail["analysis"]["command_line"]
    assert "ctx_size = 2048" in detail["analysis"]["server_toml"]
    assert detail["analysis"]["failures"][0]["kind"] == "out_of_memory"
    assert detail["analysis"]["boundary"] == ["ctx_size ≥ 20000000 failed (out of memory); ≤ 2048 ran"]


def test_a_closed_campaign_takes_no_more_trials(rig_with_token):
    campaign_id = post_json(rig_with_token.client, "/api/campaigns/", body()).json()["id"]
    post_json(rig_with_token.client, f"/api/campaigns/{campaign_id}/finish/", {"status": "cancelled"})
    trial = {"number": 1, "params": {"threads": 2, "ctx_size": 2048}, "state": "complete", "value": 1.0}
    response = post_json(rig_with_token.client, f"/api/campaigns/{campaign_id}/trials/", trial)
    assert response.status_code == 409

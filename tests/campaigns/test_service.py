"""Campaigns run from the service: staff start one (REST), its trials go to the rig's
queue as benchmark jobs one at a time, each ended job brings the next proposal; a
rig whose worker never answers lets the trial expire and the campaign says so."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest

from leaderboard.campaigns.models import Campaign
from leaderboard.jobs.models import BenchmarkJob
from leaderboard.jobs.services import jobs_sweep_stuck
from leaderboard.results.models import Run


def _body(rig: str, server: dict, **overrides):
    data = {
        "rig": rig,
        "name": "service campaign",
        "strategy": "grid",
        "repetitions": 1,
        "space": {"ctx_size": [2048, 20000000]},
        "base_config": {"server": server, "workload": {"max_tokens": 16, "warmup": 0, "request_timeout_s": 60.0}},
    }
    data.update(overrides)
    return data


@pytest.mark.django_db
def test_a_campaign_whose_rig_never_answers_fails_when_its_trial_expires(
    staff_client, make_rig_with_token, celery_broker, django_capture_on_commit_callbacks
):
    make_rig_with_token("silent-rig")
    with django_capture_on_commit_callbacks(execute=True):
        response = staff_client.post("/api/campaigns/", _body("silent-rig", {"model": "/m.gguf"}), format="json")
    assert response.status_code == 201, response.json()
    campaign = Campaign.objects.get()
    (trial,) = campaign.trials.all()
    assert trial.state == "running" and trial.job.status == "queued" and trial.job.rig.name == "silent-rig"
    assert trial.job.spec["server"]["ctx_size"] == trial.params["ctx_size"]

    with django_capture_on_commit_callbacks(execute=True):
        jobs_sweep_stuck(now=trial.job.expires_at + timedelta(seconds=1))
    campaign.refresh_from_db()
    trial.refresh_from_db()
    assert trial.state == "failed" and trial.failure_kind == "expired"
    assert campaign.status == "failed" and campaign.status_reason.startswith("trial 1 expired: not picked up by rig")
    assert BenchmarkJob.objects.count() == 1  # nothing more was dispatched


@pytest.mark.django_db
def test_staff_get_a_400_naming_the_field_and_nothing_is_queued(staff_client, make_rig_with_token, celery_broker):
    make_rig_with_token("silent-rig")
    bad = _body("silent-rig", {"model": "/m.gguf"}, space={"threads": {"min": 1, "max": 4, "step": 0}})
    response = staff_client.post("/api/campaigns/", bad, format="json")
    assert response.status_code == 400 and "space.threads.step" in response.json()["errors"]
    response = staff_client.post("/api/campaigns/", _body("silent-rig", {}, base_config={}), format="json")
    assert response.status_code == 400 and "base_config" in response.json()["errors"]
    assert Campaign.objects.count() == 0 and BenchmarkJob.objects.count() == 0


@pytest.mark.llama
@pytest.mark.celery_worker
@pytest.mark.django_db(transaction=True)
def test_a_service_campaign_runs_its_trials_as_jobs_on_the_real_rig_worker(
    staff_client, make_rig_with_token, rig_worker, live_server, gemma_server_section
):
    rig = make_rig_with_token("worker-rig")
    worker = rig_worker("worker-rig", token=rig.raw, service_url=live_server.url)
    server = gemma_server_section(startup_timeout_s=60.0, spec_type="none")
    server.pop("draft_model")
    response = staff_client.post("/api/campaigns/", _body("worker-rig", server), format="json")
    assert response.status_code == 201, response.json()
    campaign_id = response.json()["id"]

    deadline = time.monotonic() + 240
    while Campaign.objects.get(pk=campaign_id).status == "running":
        assert time.monotonic() < deadline, worker.log()[-4000:]
        time.sleep(0.5)
    campaign = Campaign.objects.get(pk=campaign_id)
    assert campaign.status == "finished", campaign.status_reason
    trials = {t.params["ctx_size"]: t for t in campaign.trials.all()}
    assert sorted(t.number for t in trials.values()) == [1, 2]
    ok, oom = trials[2048], trials[20000000]
    assert ok.state == "complete" and ok.run is not None and ok.run.status == "finished"
    assert ok.value == pytest.approx(ok.run.decode_tokens_per_s_mean) and ok.samples
    assert ok.job.status == "finished" and ok.run.uuid == ok.job.run_uuid
    assert oom.state == "failed" and oom.failure_kind == "out_of_memory", oom.failure_reason
    assert Run.objects.filter(rig=rig.rig).count() == 1
    detail = staff_client.get(f"/api/campaigns/{campaign_id}/").json()
    assert detail["analysis"]["best"]["params"] == {"ctx_size": 2048}

"""Every API list (and the jobs admin list) costs the same queries for 2 rows as for
20: no N+1. The runs and sources lists have theirs beside their other tests
(tests/results/test_api_runs_list.py, test_api_sources.py)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from leaderboard.campaigns.models import Campaign, Trial
from leaderboard.jobs.models import BenchmarkJob

pytestmark = pytest.mark.django_db


def queries_for(client, url: str) -> tuple[int, dict]:
    """Return (queries, JSON answer) of GET ``url``."""
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url)
    assert response.status_code == 200, url
    return len(captured), response.json() if response["Content-Type"].startswith("application/json") else {}


def add_jobs(rig, make_run, count: int) -> None:
    """Add ``count`` jobs to ``rig``, every other one with the run its rig posted."""
    for i in range(count):
        job = BenchmarkJob.objects.create(rig=rig, spec={}, soft_time_limit_s=60, time_limit_s=70)
        if i % 2 == 0:
            make_run(rig=rig, run={"uuid": job.run_uuid, "status": "finished", "provenance": "measured"})


def test_the_jobs_list_reads_its_runs_in_one_query(staff_client, make_rig, make_run):
    rig = make_rig(name="jobs-rig")
    add_jobs(rig, make_run, 2)
    few, answer = queries_for(staff_client, "/api/jobs/?page_size=50")
    assert len(answer["results"]) == 2 and sum(1 for j in answer["results"] if j["run"]) == 1
    add_jobs(rig, make_run, 18)
    many, answer = queries_for(staff_client, "/api/jobs/?page_size=50")
    assert len(answer["results"]) == 20 and sum(1 for j in answer["results"] if j["run"]) == 10
    assert many == few
    # Each job's run is its own (not a neighbour's, as a wrong attach would give).
    for job in answer["results"]:
        if job["run"]:
            assert job["run"]["uuid"] == job["run_uuid"] and job["run"]["status"] == "finished"


def test_the_jobs_admin_list_reads_its_runs_in_one_query(admin_client, make_rig, make_run):
    rig = make_rig(name="jobs-rig")
    add_jobs(rig, make_run, 2)
    few, _ = queries_for(admin_client, "/admin/jobs/benchmarkjob/")
    add_jobs(rig, make_run, 18)
    with CaptureQueriesContext(connection) as captured:
        html = admin_client.get("/admin/jobs/benchmarkjob/").content.decode()
    assert len(captured) == few and html.count("(finished)</a>") == 10


def test_the_rigs_list_costs_the_same_for_2_and_20_rigs(api_client, make_rig):
    for i in range(2):
        make_rig(name=f"rig-{i}", gpus=[("RTX 3090", 1), ("RTX 4090", 2)])
    few, answer = queries_for(api_client, "/api/rigs/?page_size=50")
    for i in range(2, 20):
        make_rig(name=f"rig-{i}", gpus=[("RTX 3090", 1), ("RTX 4090", 2)])
    many, answer = queries_for(api_client, "/api/rigs/?page_size=50")
    assert len(answer["results"]) == 20 and many == few


def test_the_campaigns_list_and_a_campaigns_trials_cost_the_same_for_2_and_20(api_client, make_rig):
    rig = make_rig(name="campaign-rig")

    def add(count: int) -> Campaign:
        for _ in range(count):
            campaign = Campaign.objects.create(rig=rig, name="c", spec={"objective": "decode_tokens_per_s"})
            for number in range(1, count + 1):
                Trial.objects.create(campaign=campaign, number=number, params={}, state="complete", value=10.0 + number)
        return campaign

    small = add(2)
    few_list, _ = queries_for(api_client, "/api/campaigns/")
    few_detail, answer = queries_for(api_client, f"/api/campaigns/{small.pk}/")
    assert len(answer["trials"]) == 2
    large = add(18)
    many_list, answer = queries_for(api_client, "/api/campaigns/")
    assert len(answer["results"]) == 20 and many_list == few_list
    many_detail, answer = queries_for(api_client, f"/api/campaigns/{large.pk}/")
    assert len(answer["trials"]) == 18 and many_detail == few_detail

"""A campaign trial is settled by one rule (runners/campaign/settle.py) on the rig's
CLI and on the service: every way a measuring ends gives its state and kind, the
service reads a stored run as the rig reads the document it posted, and the kind of
a failure is the one the rig reported with its job, never re-read from its text."""

from __future__ import annotations

import statistics
import uuid
from datetime import timedelta

import pytest
from django.utils import timezone

from leaderboard.campaigns.dispatch import _trial_settle, run_document
from leaderboard.campaigns.models import Campaign, Trial
from leaderboard.jobs.models import BenchmarkJob
from runners.campaign.settle import TrialEnd, trial_settle
from runners.campaign.spec import CampaignSpec
from runners.campaign.states import TrialRole, TrialState

SPEC = CampaignSpec.from_mapping(
    {"name": "s", "space": {"threads": [2, 4]}, "repetitions": 3, "constraints": [{"metric": "ttft_ms", "max": 50}]}
)
BASE = {"server": {"model": "/m/a.gguf"}}
PARAMS = {"threads": 2}
LOG = "line\n" * 3000  # 15,000 characters: kept to its last 8,000


def _sample(index: int, tps: float, ttft_ms: float = 30.0) -> dict:
    return {
        "index": index,
        "decode_tokens_per_s_server": tps,
        "decode_tokens_per_s_client": tps - 1,
        "ttft_ms": ttft_ms,
        "tokens_generated": 16,
    }


def _run(samples, **extra_fields) -> dict:
    return {"samples": samples, "extra": {}, "server_log_tail": LOG, "failure_reason": "", **extra_fields}


def _settle(run, end, role=TrialRole.SEARCH):
    return trial_settle(SPEC, base=BASE, params=PARAMS, role=role, run=run, end=end)


def test_a_finished_run_is_complete_at_its_mean_or_infeasible_when_it_breaks_a_constraint():
    fast = _settle(_run([_sample(1, 100.0), _sample(2, 110.0)]), TrialEnd("finished"))
    assert fast.state == TrialState.COMPLETE and fast.value == pytest.approx(105.0)
    assert fast.samples == [100.0, 110.0] and fast.log_tail == "" and fast.failure_kind == ""
    slow = _settle(_run([_sample(1, 100.0, ttft_ms=80.0)]), TrialEnd("finished"))
    assert slow.state == TrialState.INFEASIBLE and slow.value == 100.0
    assert slow.failure_reason == "breaks ttft_ms ≤ 50"


def test_a_finished_run_without_the_objective_is_no_measurement():
    settled = _settle(_run([]), TrialEnd("finished"))
    assert (settled.state, settled.failure_kind) == (TrialState.FAILED, "no_measurement")
    assert settled.failure_reason == "the run measured no decode_tokens_per_s" and settled.value is None


def test_a_failure_keeps_the_kind_the_rig_named_else_the_kind_of_its_status():
    run = _run([_sample(1, 100.0)], failure_reason="runner error")
    named = _settle(run, TrialEnd("failed", failure_kind="time_limit", failure_reason="stopped by the time limit"))
    assert (named.state, named.failure_kind, named.failure_reason) == (
        TrialState.FAILED,
        "time_limit",
        "stopped by the time limit",
    )
    assert named.log_tail == LOG[-8000:] and named.metrics["n_samples"] == 1  # what was measured is kept
    # The text is never read for a kind: an out-of-memory message with no kind named is a failed run.
    text_only = _settle(run, TrialEnd("failed", failure_reason="failed to allocate 3 GiB"))
    assert text_only.failure_kind == "run_failed"
    assert _settle(run, TrialEnd("aborted")).state == TrialState.ABORTED
    assert _settle(run, TrialEnd("aborted")).failure_kind == "aborted"
    assert _settle(None, TrialEnd("expired")).failure_kind == "expired"


def test_a_server_that_never_started_keeps_its_kind_and_log_tail():
    settled = _settle(None, TrialEnd("failed", failure_kind="out_of_memory", failure_reason="oom", log_tail=LOG))
    assert (settled.state, settled.failure_kind, settled.log_tail) == (TrialState.FAILED, "out_of_memory", LOG[-8000:])
    assert settled.metrics == {} and settled.samples == [] and settled.measured_s is None


def test_a_pruned_search_trial_is_complete_at_its_repetitions_mean_but_a_confirmation_is_not_pruned():
    run = _run([_sample(1, 40.0), _sample(2, 44.0)], extra={"campaign": {"pruned_after": 2}}, failure_reason="pruned")
    pruned = _settle(run, TrialEnd("aborted"))
    assert pruned.pruned and pruned.state == TrialState.COMPLETE
    assert pruned.value == pytest.approx(statistics.fmean([40.0, 44.0])) and pruned.failure_reason == "pruned"
    confirmation = _settle(run, TrialEnd("aborted"), role=TrialRole.CONFIRMATION)
    assert not confirmation.pruned and confirmation.state == TrialState.ABORTED


def test_an_interrupted_run_is_aborted_interrupted_before_anything_else():
    run = _run([_sample(1, 40.0)], extra={"interrupted": True, "campaign": {"pruned_after": 1}})
    settled = _settle({**run, "failure_reason": "interrupted by the user"}, TrialEnd("aborted"))
    assert (settled.state, settled.failure_kind, settled.failure_reason) == (
        TrialState.ABORTED,
        "interrupted",
        "interrupted by the user",
    )


@pytest.mark.django_db
def test_the_service_reads_a_stored_run_as_the_rig_reads_its_document(make_run):
    samples = [_sample(1, 100.0), _sample(2, 0.0), _sample(3, 90.0, ttft_ms=45.0)]
    extra = {"campaign": {"perplexity": {"/m/a.gguf": {"perplexity": 12.5}}}}
    sent = _run(samples, extra=extra, failure_reason="runner error: boom", server_log_tail="tail\n")
    run = make_run(
        samples=samples,
        run={"uuid": uuid.uuid4(), "status": "failed", "provenance": "measured", "failure_reason": "runner error: boom",
             "server_log_tail": "tail\n", "extra": extra},
    )  # fmt: skip
    stored = run_document(run)
    for end in (TrialEnd("finished"), TrialEnd("failed", failure_kind="time_limit", failure_reason="x")):
        assert _settle(stored, end) == _settle(sent, end)
    # The test can tell two settlements apart: a different run settles differently.
    assert _settle(stored, TrialEnd("finished")) != _settle(_run(samples[:2]), TrialEnd("finished"))
    assert _settle(stored, TrialEnd("finished")).metrics["perplexity"] == 12.5


@pytest.mark.django_db
def test_a_service_trial_takes_the_kind_its_rig_reported_not_one_read_from_the_error(make_rig):
    """On main before the one rule, the service re-read the error text with its own copy of
    the harness's patterns: "the port is taken" matched none of them (run_failed)."""
    rig = make_rig()
    campaign = Campaign.objects.create(rig=rig, name="c", spec=SPEC.as_dict(), base_config=BASE, origin="service")
    now = timezone.now()
    job = BenchmarkJob.objects.create(
        rig=rig,
        spec={},
        status="failed",
        soft_time_limit_s=60,
        time_limit_s=120,
        error="ServerError: the port is taken: failed to bind (exit code 1)",
        failure_kind="port_in_use",
        started_at=now - timedelta(seconds=7),
        finished_at=now,
    )
    trial = Trial.objects.create(campaign=campaign, number=1, params=PARAMS, state="running", job=job)
    _trial_settle(trial, job, SPEC, BASE)
    trial.refresh_from_db()
    assert (trial.state, trial.failure_kind) == ("failed", "port_in_use")
    assert trial.failure_reason == job.error and trial.duration_s == pytest.approx(7.0) and trial.run is None
    lost = Trial.objects.create(campaign=campaign, number=2, params=PARAMS, state="running")
    _trial_settle(lost, None, SPEC, BASE)
    lost.refresh_from_db()
    assert (lost.state, lost.failure_kind, lost.failure_reason) == ("failed", "lost", "its job was deleted")

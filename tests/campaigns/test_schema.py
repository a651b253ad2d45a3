"""The campaigns' and job reports' payload definitions (runners/) agree with the
service's models: the same choices, text no longer than the columns."""

from __future__ import annotations

from leaderboard.campaigns.models import Campaign, CampaignOrigin, CampaignStatus, Trial, TrialRole, TrialState
from leaderboard.jobs.models import REPORTED_STATUSES, BenchmarkJob, JobStatus
from leaderboard.results.models import RunStatus
from runners.campaign import schema, states
from runners.delivery import schema as run_schema
from runners.delivery import status_schema


def test_the_choices_are_the_models():
    assert set(schema.TRIAL_STATES) == set(TrialState.values) - {TrialState.RUNNING}
    assert set(schema.TRIAL_ROLES) == set(TrialRole.values)
    assert set(schema.FINISH_STATUSES) == set(CampaignStatus.values) - {CampaignStatus.RUNNING}
    assert set(status_schema.REPORTED_STATUSES) == {s.value for s in REPORTED_STATUSES}


def test_the_rigs_enums_are_the_payloads_words_and_the_models_choices():
    """One list per word set: the rig's enums (runners/campaign/states.py), the payload
    Literals the API checks with, and the service's model choices agree."""
    assert tuple(states.TrialState) == schema.TRIAL_STATES
    assert tuple(states.TrialRole) == schema.TRIAL_ROLES
    assert set(states.TrialState) == set(TrialState.values) - {TrialState.RUNNING}
    assert set(states.TrialRole) == set(TrialRole.values)
    assert set(states.CampaignOrigin) == set(CampaignOrigin.values)
    # A run's and a job's ended statuses, named once each on the rig.
    assert set(run_schema.END_STATUSES) == set(RunStatus.values) - {RunStatus.RUNNING}
    assert set(status_schema.JOB_END_STATUSES) == set(JobStatus.values) - {JobStatus.QUEUED, JobStatus.RUNNING}
    # Every failure kind a rig may report fits the job's column and the trial's.
    longest = max(len(kind) for kind in (*status_schema.REPORTED_FAILURE_KINDS, *status_schema.FailureKind))
    assert longest <= BenchmarkJob._meta.get_field("failure_kind").max_length
    assert longest <= Trial._meta.get_field("failure_kind").max_length


def test_text_fits_the_columns():
    assert Campaign._meta.get_field("name").max_length == schema.MAX_NAME_CHARS
    assert Trial._meta.get_field("failure_kind").max_length == schema.MAX_FAILURE_KIND_CHARS
    job = BenchmarkJob._meta
    assert job.get_field("attempt").max_length == status_schema.MAX_ATTEMPT_CHARS
    assert job.get_field("worker").max_length == status_schema.MAX_WORKER_CHARS
    assert job.get_field("progress").max_length == status_schema.MAX_PROGRESS_CHARS


def test_the_rigs_trial_record_is_what_the_service_takes():
    """TrialResult.payload() of a trial at every limit the rig sets passes the schema."""
    from runners.campaign.search import TrialResult

    trial = TrialResult(
        number=3, params={"threads": 4, "model": "/m/a.gguf"}, state="failed", failure_kind="out_of_memory",
        failure_reason="x" * 50_000, log_tail="y" * 50_000, duration_s=12.0, measured_s=3.0,
        metrics={"decode_tokens_per_s": float("inf"), "n_samples": 2, "perplexity": None},
        samples=[float("nan"), 12.0], run_uuid="",
    )  # fmt: skip
    assert schema.trial_problems(trial.payload()) == {}

"""Campaigns run from the service: each trial is a benchmark job on the rig's
queue (leaderboard.jobs), one at a time; when a trial's job ends, the trial is
settled from its run (or its failure) and the next point is proposed from the
stored trials (runners.campaign.search, the same search the rig's CLI runs).

``campaign_advance`` is idempotent and locks the campaign: it is called after
the commit of a trial's job ending (``campaign_dispatch_on_job_end``, which
jobs.services calls as it stores the job ended: campaigns/apps.py names it
there) and may be called again by anyone (a sweeper, the admin) without
dispatching twice.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from django.db import transaction
from django.utils import timezone

from leaderboard.campaigns.models import Campaign, CampaignOrigin, CampaignStatus, Trial, TrialRole, TrialState
from leaderboard.jobs.models import BenchmarkJob, JobKind, JobStatus
from leaderboard.jobs.services import job_abort, jobs_enqueue
from leaderboard.results.models import Run
from runners.campaign.figures import SAMPLE_FIELDS
from runners.campaign.search import Search, confirmation_target, prune_history
from runners.campaign.settle import TrialEnd, trial_settle
from runners.campaign.spec import CampaignSpec
from runners.campaign.trial import trial_asks, trial_config
from runners.delivery.status_schema import FailureKind

logger = logging.getLogger(__name__)


def run_document(run: Run) -> dict[str, Any]:
    """Return a stored run in the keys of the run document the rig posted (the ones
    runners.campaign.settle reads), so a service trial is settled as the CLI's is."""
    return {
        "samples": [{name: getattr(s, name) for name in SAMPLE_FIELDS} for s in run.samples.all()],
        "extra": run.extra or {},
        "server_log_tail": run.server_log_tail,
        "failure_reason": run.failure_reason,
    }


def _trial_settle(trial: Trial, job: BenchmarkJob | None, spec: CampaignSpec, base: Mapping[str, Any]) -> None:
    """Store ``trial`` settled from its ended job and its run by the one rule
    (runners.campaign.settle); the failure kind is the one the rig reported with the
    job (a server's own kind, bad_config, time_limit), else its status's. A trial
    whose job was deleted is failed, ``lost``."""
    if job is None:
        run, end = None, TrialEnd("failed", failure_kind=FailureKind.LOST, failure_reason="its job was deleted")
    else:
        run = Run.objects.filter(uuid=job.run_uuid).first()
        trial.run = run
        trial.duration_s = (
            (job.finished_at - job.started_at).total_seconds() if job.started_at and job.finished_at else None
        )
        reason = job.error or (run.failure_reason if run is not None else "") or f"job {job.status}"
        end = TrialEnd(job.status, failure_kind=job.failure_kind, failure_reason=reason)
    document = run_document(run) if run is not None else None
    settled = trial_settle(spec, base=base, params=trial.params, role=trial.role, run=document, end=end)
    for name, value in vars(settled).items():
        setattr(trial, name, value)
    trial.save()


def campaign_advance(*, campaign_id: int, created_by: Any = None) -> Trial | None:
    """Settle the campaign's trial in hand if its job has ended, then dispatch the
    next one; return the trial now in hand (None when none: waiting or done).
    When the search ends (budget, wall time or space spent), its best feasible
    trial is dispatched once more as the confirmation (``confirm_repetitions``
    repetitions), and the campaign closes when that has ended. Close the campaign
    failed when a job expired (the rig's worker never answers: the campaign says so)."""
    with transaction.atomic():
        campaign = Campaign.objects.select_for_update().select_related("rig").get(pk=campaign_id)
        if campaign.status != CampaignStatus.RUNNING or campaign.origin != CampaignOrigin.SERVICE:
            return None
        spec = CampaignSpec.from_mapping(campaign.spec)
        pending = campaign.trials.filter(state=TrialState.RUNNING).select_related("job").first()
        if pending is not None:
            job = pending.job
            if job is not None and not job.is_terminal:
                return pending  # still measuring
            _trial_settle(pending, job, spec, campaign.base_config)
            if job is not None and job.status == JobStatus.EXPIRED:
                _close(campaign, CampaignStatus.FAILED, f"trial {pending.number} expired: {job.error}")
                return None
        trials = list(campaign.trials.order_by("number"))
        searched = [t for t in trials if t.role == TrialRole.SEARCH]
        done = _search_done(campaign, spec, searched)
        if not done:
            # A pruned trial is no measurement of its point (the CLI tells Optuna it was pruned).
            history = [
                (t.params, t.value if t.state == TrialState.COMPLETE and not t.pruned else None) for t in searched
            ]
            proposal = Search.from_history(spec, history).ask()
            if proposal is not None:
                return _dispatch_trial(campaign, spec, len(trials) + 1, proposal[1], created_by=created_by)
            done = "every point of the space was measured"
        best = confirmation_target(spec.direction, searched)
        confirmed = any(t.role == TrialRole.CONFIRMATION for t in trials)
        if spec.confirm_repetitions and best is not None and not confirmed:
            return _dispatch_trial(
                campaign, spec, len(trials) + 1, best.params, role=TrialRole.CONFIRMATION, created_by=created_by
            )
        _close(campaign, CampaignStatus.FINISHED, done)
        return None


def _search_done(campaign: Campaign, spec: CampaignSpec, searched: list[Trial]) -> str:
    """Return why the search is over ('' while it goes on)."""
    if len(searched) >= spec.trial_budget():
        return "budget spent"
    elapsed = (timezone.now() - campaign.created_at).total_seconds()
    if spec.budget_wall_time_s and elapsed >= spec.budget_wall_time_s:
        return "wall time spent"
    return ""


def _dispatch_trial(
    campaign: Campaign,
    spec: CampaignSpec,
    number: int,
    params: dict[str, Any],
    *,
    role: str = TrialRole.SEARCH,
    created_by: Any = None,
) -> Trial:
    """Queue one trial's job (search: ``repetitions``, pruned against the completed
    trials; confirmation: ``confirm_repetitions``, never pruned) and store the trial running."""
    if role == TrialRole.CONFIRMATION:
        asks, repetitions = trial_asks(spec, campaign.base_config), spec.confirm_repetitions
    else:
        searched = [t for t in campaign.trials.all() if t.role == TrialRole.SEARCH]
        asks, repetitions = (
            trial_asks(spec, campaign.base_config, prune_history=prune_history(searched)),
            spec.repetitions,
        )
    config = trial_config(campaign.base_config, params, repetitions=repetitions, trial=asks)
    config["notes"] = f"campaign {campaign.name!r} {role} trial {number}"
    job = jobs_enqueue(rig=campaign.rig, kind=JobKind.SUITE, spec=config, created_by=created_by)
    return Trial.objects.create(
        campaign=campaign,
        number=number,
        params=params,
        role=role,
        state=TrialState.RUNNING,
        job=job,
        run_uuid=job.run_uuid,
    )


def _close(campaign: Campaign, status: str, reason: str) -> None:
    campaign.status, campaign.status_reason, campaign.finished_at = status, reason[:2000], timezone.now()
    campaign.save(update_fields=["status", "status_reason", "finished_at"])


def campaign_cancel(*, campaign: Campaign, reason: str = "cancelled by staff") -> Campaign:
    """Cancel a campaign: its trial in hand is aborted on the rig (the rig stops after
    the repetition in hand and the run keeps its samples) and settled; nothing else is dispatched."""
    with transaction.atomic():
        locked = Campaign.objects.select_for_update().get(pk=campaign.pk)
        if locked.status != CampaignStatus.RUNNING:
            return locked
        _close(locked, CampaignStatus.CANCELLED, reason)
    pending = campaign.trials.filter(state=TrialState.RUNNING).select_related("job").first()
    if pending is not None and pending.job is not None:
        job = pending.job
        if not job.is_terminal:
            job = job_abort(job=job, reason=f"campaign cancelled: {reason}")
        _trial_settle(pending, job, CampaignSpec.from_mapping(locked.spec), locked.base_config)
    return locked


def campaigns_advance_running() -> list[int]:
    """Call ``campaign_advance`` for every running service campaign whose trial in
    hand has ended, or which has none (a missed job end); return their ids. One
    campaign's error is logged and the others go on."""
    moved = []
    for campaign_id in Campaign.objects.filter(
        status=CampaignStatus.RUNNING, origin=CampaignOrigin.SERVICE
    ).values_list("pk", flat=True):
        pending = Trial.objects.filter(campaign_id=campaign_id, state=TrialState.RUNNING).select_related("job").first()
        if pending is not None and pending.job is not None and not pending.job.is_terminal:
            continue  # measuring: nothing was missed
        try:
            campaign_advance(campaign_id=campaign_id)
        except Exception:  # the sweeper must reach the next campaign whatever this one did
            logger.exception("could not advance campaign %s", campaign_id)
            continue
        moved.append(campaign_id)
    return moved


def campaign_dispatch_on_job_end(job: BenchmarkJob) -> None:
    """Advance the campaign of ``job``'s trial once the job has ended, after the
    commit of the transaction that stored it ended (jobs.services calls this in it)."""
    if not job.is_terminal:
        return
    trial = Trial.objects.filter(job_id=job.pk, state=TrialState.RUNNING).only("campaign_id").first()
    if trial is None:
        return
    campaign_id = trial.campaign_id
    transaction.on_commit(lambda: campaign_advance(campaign_id=campaign_id))

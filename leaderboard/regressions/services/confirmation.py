"""Confirmation: a change is checked before it stands, then acted on.

A build whose first run is judged a change moves to a confirming phase
(states.BuildStatus): ``rerunning`` (services/rerun.py: the candidate alone,
``confirm_runs`` times) or ``ab_pairs`` (services/ab_confirmation.py, the
default: baseline and candidate interleaved on the same rig, which a slow
spell or a speed step between two nights cannot fool). This module routes a
build to one or the other, judges what the rig reports, and moves the build
back to ``benchmarked`` once every verdict has its answer.

Every confirmation's runs leave through one seam, ``_send_after_commit``:
they are sent to the rig's queue once the transaction commits, or, when the
broker cannot be reached, the verdicts they were to check settle as
unchecked (the first run stands) and are acted on at once. Either way a
regression that stands is acted on, whichever mode was to confirm it:
``standing_changes_act_on`` alerts, bisects (if the subscription says so)
and, for one confirmed by A/B pairs, fans out to the branch's other rigs.

Inside ``sends_held()`` (a recorded timeline being imported, services/imports.py)
the seam sends nothing: the runs the service asked for stay queued, and the
caller fills them from the recording and reports them as the rig did."""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar

from django.db import transaction
from django.utils import timezone

from leaderboard.regressions.models import BuildRecord, ConfirmMode, Verdict, VerdictKind
from leaderboard.regressions.services.ab_confirmation import ab_pairs_judge, ab_pairs_queue
from leaderboard.regressions.services.alerts import alerts_queue_for
from leaderboard.regressions.services.bisect import bisect_start
from leaderboard.regressions.services.detection import build_send
from leaderboard.regressions.services.fanout import fanout_builds_add
from leaderboard.regressions.services.rerun import reruns_add, reruns_judge
from leaderboard.regressions.states import (
    BuildRunStatus,
    BuildStatus,
    Confirmation,
    build_move,
    build_run_move,
    confirmation_move,
)

_sends_held: ContextVar[bool] = ContextVar("sends_held", default=False)


@contextmanager
def sends_held() -> Iterator[None]:
    """Within this block no confirmation run or fan-out build leaves for a rig:
    what the service queues stays queued, for the caller to fill (module doc)."""
    token = _sends_held.set(True)
    try:
        yield
    finally:
        _sends_held.reset(token)


def confirmation_queue(*, build: BuildRecord, verdicts: Sequence[Verdict]) -> list[Verdict]:
    """Hold the build's change verdicts pending and queue their confirmation
    (re-runs or A/B pairs, as the subscription says; one job to the rig, sent
    once committed). Return the verdicts held; none when the subscription
    confirms nothing, the build is no nightly build, or no verdict is a change."""
    todo = [v for v in verdicts if v.kind != VerdictKind.NONE and v.confirmation == Confirmation.NOT_ASKED]
    sub = build.subscription
    if not todo or not build.is_nightly:
        return []
    if sub.confirm_mode != ConfirmMode.AB and sub.confirm_runs == 0:
        return []
    with transaction.atomic():
        if sub.confirm_mode == ConfirmMode.AB:
            held, phase = ab_pairs_queue(build=build, verdicts=todo), BuildStatus.AB_PAIRS
        else:
            held, phase = reruns_add(build=build, verdicts=todo, count=sub.confirm_runs), BuildStatus.RERUNNING
        if held:
            build_move(build, phase)
            build.save(update_fields=["status"])
            _send_after_commit(build)
    return held


def confirmation_judge(*, build: BuildRecord) -> list[Verdict]:
    """Judge the confirmation runs the rig reported for a build in a confirming
    phase: send the next batch of A/B pairs while the rule asks for more, else
    settle each verdict whose runs are all back; once none waits, the build is
    ``benchmarked`` again. Recompute whether the build is accepted. Return the
    build's verdicts."""
    with transaction.atomic():
        if build.status == BuildStatus.AB_PAIRS:
            judged = ab_pairs_judge(build=build)
            verdicts, more, waiting = judged.verdicts, judged.more, judged.waiting
        else:
            verdicts, more = reruns_judge(build=build), False
            waiting = any(v.confirmation == Confirmation.PENDING for v in verdicts)
        if more:
            _send_after_commit(build)
        elif not waiting:
            build_move(build, BuildStatus.BENCHMARKED)
            build.save(update_fields=["status"])
        build.accepted_update(verdicts)
    return verdicts


def standing_changes_act_on(*, build: BuildRecord, verdicts: Sequence[Verdict]) -> None:
    """Alert on (and, if the subscription says so, bisect) each regression that
    stands: confirmed, or needing no confirmation, or one whose confirmation
    could not be made; one confirmed by A/B pairs is also checked on the
    branch's other rigs (fan-out). All idempotent. A fan-out verdict is an
    answer for the report, acted on by none of these."""
    for verdict in verdicts:
        if verdict.kind == VerdictKind.REGRESSION and verdict.stands and verdict.fanout_of_id is None:
            if verdict.confirmation == Confirmation.AB_CONFIRMED:
                for fanout in fanout_builds_add(verdict=verdict):
                    _send_after_commit(fanout)
            alerts_queue_for(verdict=verdict)
            if build.subscription.bisect:
                bisect_start(verdict=verdict)


def _send_after_commit(build: BuildRecord) -> None:
    """The one way a confirmation's runs (and a fan-out build) leave for the rig:
    sent once the current transaction commits, or settled and acted on when they cannot be;
    inside ``sends_held()``, left queued."""
    if _sends_held.get():
        return
    build.celery_task_id = str(uuid.uuid4())
    build.save(update_fields=["celery_task_id"])
    transaction.on_commit(lambda: _send_or_settle(build.pk))


def _send_or_settle(build_id: int) -> None:
    build = BuildRecord.objects.select_related("subscription__rig").get(pk=build_id)
    if build_send(build):
        return
    _unsent_settle(build)


def _unsent_settle(build: BuildRecord) -> None:
    """Settle what waited on runs that never left: each fails with the broker's
    error; a fan-out build not yet built is an error (its report says so); the
    pending verdicts of a confirming build are unchecked (the first run stands)
    and acted on like any verdict that stands."""
    what = "A/B pairs" if build.status == BuildStatus.AB_PAIRS else "re-run"
    with transaction.atomic():
        for build_run in build.build_runs.filter(status=BuildRunStatus.QUEUED):
            build_run_move(build_run, BuildRunStatus.FAILED)
            build_run.error = build.error
            build_run.save(update_fields=["status", "error"])
        if build.status == BuildStatus.QUEUED:
            build_move(build, BuildStatus.ERROR)
            build.finished_at = timezone.now()
            build.save(update_fields=["status", "error", "finished_at"])
            return
        note = f"{what} not queued ({build.error[:80]}); the first run stands"
        for verdict in build.verdicts.filter(confirmation=Confirmation.PENDING):
            confirmation_move(verdict, Confirmation.UNCHECKED)
            verdict.reason_add(note)
            verdict.save(update_fields=["confirmation", "reason"])
        build_move(build, BuildStatus.BENCHMARKED)
        build.save(update_fields=["status"])
    standing_changes_act_on(build=build, verdicts=list(build.verdicts.select_related("reference_config")))

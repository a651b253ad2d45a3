"""Confirmation: a change is checked before it stands, then acted on.

A build whose first run is judged a change moves to a confirming phase
(states.BuildStatus): ``rerunning`` (services/rerun.py: the candidate alone,
``confirm_runs`` times) or ``ab_pairs``, where baseline and candidate run on the
same rig, which a slow spell or a speed step between two nights cannot fool:
as blocks (services/verdict_blocks.py, the default: both servers resident,
repetitions alternated) or as run-level pairs (services/ab_confirmation.py). This module routes a
build to one or the other, judges what the rig reports, and moves the build
back to ``benchmarked`` once every verdict has its answer.

Every confirmation's runs leave through one seam, ``_send_after_commit`` (a
blocks batch through ``_batch_send_after_commit``, to the rig's A/B task):
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

import logging
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from django.db import transaction
from django.utils import timezone

from leaderboard.core.queues import rig_task_send
from leaderboard.regressions.models import BuildRecord, ConfirmMode, Verdict, VerdictKind
from leaderboard.regressions.services.aa_checks import AB_RIG_TASK, ab_report_parse
from leaderboard.regressions.services.ab_confirmation import ab_pairs_judge, ab_pairs_queue
from leaderboard.regressions.services.alerts import alerts_queue_for
from leaderboard.regressions.services.bisect import bisect_start
from leaderboard.regressions.services.detection import build_send
from leaderboard.regressions.services.fanout import fanout_builds_add
from leaderboard.regressions.services.rerun import reruns_add, reruns_judge
from leaderboard.regressions.services.verdict_blocks import (
    VERDICT_PREFIX,
    BatchAsk,
    verdict_blocks_queue,
    verdict_blocks_record,
    verdict_blocks_spec,
    verdict_unmeasured,
)
from leaderboard.regressions.states import (
    BuildRunStatus,
    BuildStatus,
    Confirmation,
    build_move,
    build_run_move,
    confirmation_move,
)

logger = logging.getLogger(__name__)

_sends_held: ContextVar[bool] = ContextVar("sends_held", default=False)
_held_batches: ContextVar[list[BatchAsk]] = ContextVar("held_batches")


@contextmanager
def sends_held() -> Iterator[list[BatchAsk]]:
    """Within this block no confirmation run, A/B blocks batch or fan-out build
    leaves for a rig: what the service queues stays queued, for the caller to
    fill (module doc); the batches of blocks asked for are appended, in order,
    to the list it yields."""
    token, batches = _sends_held.set(True), _held_batches.set([])
    try:
        yield _held_batches.get()
    finally:
        _sends_held.reset(token)
        _held_batches.reset(batches)


def confirmation_queue(*, build: BuildRecord, verdicts: Sequence[Verdict]) -> list[Verdict]:
    """Hold the build's change verdicts pending and queue their confirmation
    (re-runs or A/B pairs, as the subscription says; one job to the rig, sent
    once committed). Return the verdicts held; none when the subscription
    confirms nothing, the build is no nightly build, or no verdict is a change.

    A subscription that screens every step (``screen_every_step``, A/B blocks
    only) holds its no-change verdicts too: the first run is one run a build,
    whose noise floor can hide a real step, so blocks judge every step, and a
    change they find stands (ab_found) though the first run saw none."""
    sub = build.subscription
    screened = sub.screen_every_step and sub.confirm_mode == ConfirmMode.BLOCKS
    todo = [
        v for v in verdicts if (screened or v.kind != VerdictKind.NONE) and v.confirmation == Confirmation.NOT_ASKED
    ]
    if not todo or not build.is_nightly:
        return []
    if sub.confirm_mode == ConfirmMode.RERUN and sub.confirm_runs == 0:
        return []
    if sub.confirm_mode == ConfirmMode.BLOCKS:
        return _blocks_queue(build, todo)
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


def _blocks_queue(build: BuildRecord, todo: Sequence[Verdict]) -> list[Verdict]:
    """Hold the change verdicts pending on A/B blocks; ask the rig for each one's first batch."""
    with transaction.atomic():
        asks = verdict_blocks_queue(verdicts=todo)
        if not asks:
            return []
        build_move(build, BuildStatus.AB_PAIRS)
        build.save(update_fields=["status"])
        for ask in asks:
            _batch_send_after_commit(ask)
    held = {ask.verdict_id for ask in asks}
    return [v for v in todo if v.pk in held]


def blocks_report_receive(*, report: Mapping[str, Any]) -> Verdict | None:
    """Record one batch of a verdict's A/B blocks (sent by the rig's A/B task)
    and judge them: ask for the next batch while the rule says continue, else
    answer the verdict; once none of the build's verdicts waits, the build is
    benchmarked again and what stands is acted on. A report for no verdict, or
    for one no longer pending (a duplicate delivery), changes nothing: None."""
    ident = str(report.get("confirmation_id") or "") if isinstance(report, Mapping) else ""
    number = ident[len(VERDICT_PREFIX) :]
    if not ident.startswith(VERDICT_PREFIX) or not number.isdigit():
        logger.warning("A/B blocks report for an unknown verdict %r", ident)
        return None
    parsed = ab_report_parse(ident, report)
    with transaction.atomic():
        verdict = (
            Verdict.objects.select_for_update(of=("self",))
            .select_related("build__subscription", "reference_config")
            .filter(pk=int(number))
            .first()
        )
        if verdict is None or verdict.confirmation != Confirmation.PENDING:
            return None
        ask = verdict_blocks_record(verdict, parsed)
        if ask is not None:
            _batch_send_after_commit(ask)
            return verdict
        done = _blocks_build_settle(verdict.build)
    if done:
        standing_changes_act_on(build=verdict.build, verdicts=done)
    return verdict


def _blocks_build_settle(build: BuildRecord) -> list[Verdict]:
    """Once no verdict of ``build`` waits on its blocks, move it back to
    benchmarked and recompute whether it is accepted; return its verdicts
    then (to act on), else none."""
    build = BuildRecord.objects.select_for_update().get(pk=build.pk)
    verdicts = list(build.verdicts.select_related("reference_config").order_by("id"))
    if build.status != BuildStatus.AB_PAIRS or any(v.confirmation == Confirmation.PENDING for v in verdicts):
        return []
    build_move(build, BuildStatus.BENCHMARKED)
    build.save(update_fields=["status"])
    build.accepted_update(verdicts)
    return verdicts


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
    could not be made, or one A/B blocks found where the first run saw none;
    one confirmed or found by A/B is also checked on the branch's other rigs
    (fan-out). All idempotent. A fan-out verdict is an answer for the report,
    acted on by none of these."""
    for verdict in verdicts:
        if verdict.kind == VerdictKind.REGRESSION and verdict.stands and verdict.fanout_of_id is None:
            if verdict.confirmation in (Confirmation.AB_CONFIRMED, Confirmation.AB_FOUND):
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


def _batch_send_after_commit(ask: BatchAsk) -> None:
    """The one way a batch of A/B blocks leaves for the rig: sent once the
    current transaction commits; when the broker cannot be reached the verdict
    is unchecked (the first run stands) and acted on; inside ``sends_held()``, kept
    for the caller (``held_batches``)."""
    if _sends_held.get():
        _held_batches.get().append(ask)
        return
    transaction.on_commit(lambda: _batch_send_or_settle(ask))


def _batch_send_or_settle(ask: BatchAsk) -> None:
    verdict = Verdict.objects.select_related("build__subscription__rig", "reference_config").get(pk=ask.verdict_id)
    try:
        rig_task_send(
            task_name=AB_RIG_TASK,
            spec=verdict_blocks_spec(verdict, first_index=ask.first_index, count=ask.count),
            queue=verdict.build.subscription.rig.queue_name,
            task_id=str(uuid.uuid4()),
            time_limit=None,
        )
    except Exception as exc:  # any broker error: the batch never left, and the verdict says why
        logger.exception("could not queue A/B blocks of verdict %s", ask.verdict_id)
        with transaction.atomic():
            locked = Verdict.objects.select_for_update().get(pk=ask.verdict_id)
            if locked.confirmation != Confirmation.PENDING:
                return
            verdict_unmeasured(locked, f"A/B blocks not queued (could not reach the Celery broker: {exc})"[:150])
            done = _blocks_build_settle(verdict.build)
        if done:
            standing_changes_act_on(build=verdict.build, verdicts=done)


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

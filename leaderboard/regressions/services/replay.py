"""Replaying a window of llama.cpp releases on one rig: each release, oldest
first, goes through the nightly chain as a new release would (built and
benchmarked on the rig, judged, confirmed by A/B, fanned out, bisected:
services/builds.py decides all of that as for any build); the replay only
queues the next release once the chain has settled on the one before, so
each release is judged against its predecessor, and a new rig shows months
of history on its first day.

The state lives in the database, one ReplayStep per release (pending →
queued → done; ``_ALLOWED``), so ``replay_advance`` can be called by any
process at any time: a replay killed mid-way goes on from its first step not
done, and a release already built on the subscription (by an earlier replay
or the nightly) is used as it is, never built twice.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

from django.db import transaction
from django.utils import timezone

from leaderboard.core.errors import ApplicationError
from leaderboard.regressions.models import (
    BuildRecord,
    BuildRun,
    Follows,
    Replay,
    ReplayStep,
    ReplayStepState,
    Subscription,
)
from leaderboard.regressions.services.detection import build_queue, build_send
from leaderboard.regressions.states import BuildRunStatus, BuildStatus
from runners.builds.releases import release_tag

_ALLOWED: dict[str, frozenset[str]] = {
    ReplayStepState.PENDING: frozenset({ReplayStepState.QUEUED, ReplayStepState.DONE}),
    ReplayStepState.QUEUED: frozenset({ReplayStepState.DONE}),
    ReplayStepState.DONE: frozenset(),
}


def _move(step: ReplayStep, to: ReplayStepState, **fields: object) -> ReplayStep:
    """Move ``step`` to ``to`` (with ``fields``); raise ApplicationError for a move _ALLOWED refuses."""
    if to not in _ALLOWED[step.state]:
        raise ApplicationError(f"a replay step cannot go from {step.state} to {to}", field="state")
    step.state = to
    for name, value in fields.items():
        setattr(step, name, value)
    step.save()
    return step


@dataclass(frozen=True)
class ReplayProgress:
    """Where a replay stands after one ``replay_advance``: ``current`` is the
    step in flight (None when all are done)."""

    replay: Replay
    current: ReplayStep | None
    done: int
    total: int

    @property
    def finished(self) -> bool:
        return self.current is None


def replay_open(*, subscription: Subscription, releases: Sequence[int], label: str = "") -> Replay:
    """Return the replay of ``releases`` (build numbers) on ``subscription``,
    made with one pending step per release the first time and found as it was
    after (a restart resumes it). Raise ApplicationError if the subscription
    does not follow releases or ``releases`` is empty."""
    if subscription.follows != Follows.RELEASES:
        raise ApplicationError("the subscription does not follow releases", field="follows")
    numbers = sorted(set(releases))
    if not numbers:
        raise ApplicationError("no release to replay", field="releases")
    with transaction.atomic():
        replay, created = Replay.objects.get_or_create(
            subscription=subscription,
            first_release=numbers[0],
            last_release=numbers[-1],
            defaults={"label": label[:300]},
        )
        if not created and label and not replay.label:
            replay.label = label[:300]
            replay.save(update_fields=["label"])
        have = set(replay.steps.values_list("release", flat=True))
        ReplayStep.objects.bulk_create([ReplayStep(replay=replay, release=n) for n in numbers if n not in have])
    return replay


# The phases in which the chain is done with a build (states.BuildStatus): a
# confirming phase still owes runs, a queued build its report.
_SETTLED_PHASES = (BuildStatus.BENCHMARKED, BuildStatus.FAILED, BuildStatus.ERROR)


def build_settled(build: BuildRecord) -> bool:
    """Return True when the chain has nothing left to do on ``build``'s rig
    for it: the build is in a settled phase and no run of this subscription
    awaits the rig (a bisection's midpoints). A report is recorded and judged
    in one transaction (services/builds.py), so a benchmarked build seen here
    has its verdicts and any confirmation it needs. Fan-out to other rigs is
    theirs and is not waited for."""
    build.refresh_from_db(fields=["status"])
    if build.status not in _SETTLED_PHASES:
        return False
    queued = BuildRun.objects.filter(build__subscription_id=build.subscription_id, status=BuildRunStatus.QUEUED)
    return not queued.exists()


def _load_1m() -> float | None:
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:  # not every platform has a load average
        return None


def _note_load(step: ReplayStep) -> None:
    load = _load_1m()
    if load is None:
        return
    step.load_1m_min = load if step.load_1m_min is None else min(step.load_1m_min, load)
    step.load_1m_max = load if step.load_1m_max is None else max(step.load_1m_max, load)
    step.save(update_fields=["load_1m_min", "load_1m_max"])


def _start(step: ReplayStep, previous: str) -> ReplayStep:
    sub = step.replay.subscription
    tag = release_tag(step.release)
    existing = BuildRecord.objects.filter(subscription=sub, commit=tag).first()
    if existing is not None:
        # Built before (the nightly, another replay): judged then, used as it is.
        return _move(step, ReplayStepState.QUEUED, build=existing, queued_at=timezone.now())
    build = build_queue(subscription=sub, commit=tag, previous_commit=previous)
    return _move(step, ReplayStepState.QUEUED, build=build, queued_at=timezone.now())


def replay_advance(*, replay: Replay) -> ReplayProgress:
    """Move ``replay`` on as far as it can go now: settle the step in flight
    if the chain is done with its build, queue the next release's build.
    Return where it stands; never waits (the caller polls)."""
    steps = list(replay.steps.select_related("build").order_by("release"))
    for index, step in enumerate(steps):
        if step.state == ReplayStepState.DONE:
            continue
        if step.state == ReplayStepState.PENDING:
            previous = steps[index - 1].build if index else None
            step = _start(step, previous.commit if previous is not None else "")
        if step.build is None:  # its build was deleted: nothing left to wait for
            _move(step, ReplayStepState.DONE, settled_at=timezone.now())
            continue
        _note_load(step)
        if not build_settled(step.build):
            return ReplayProgress(replay, step, index, len(steps))
        _move(step, ReplayStepState.DONE, settled_at=timezone.now())
    if replay.finished_at is None:
        replay.finished_at = timezone.now()
        replay.save(update_fields=["finished_at"])
    return ReplayProgress(replay, None, len(steps), len(steps))


def replay_resend(*, replay: Replay) -> list[BuildRecord]:
    """Send again every build of the replay's subscription with runs the rig
    never reported (for a rig whose queue lost them: a reboot before the
    broker kept them); return those builds. A build still in the rig's queue
    would run twice, so this is asked for, never done on its own."""
    builds = (
        BuildRecord.objects.filter(subscription=replay.subscription, build_runs__status=BuildRunStatus.QUEUED)
        .distinct()
        .select_related("subscription__rig")
    )
    sent = []
    for build in builds:
        if build_send(build):
            sent.append(build)
    return sent

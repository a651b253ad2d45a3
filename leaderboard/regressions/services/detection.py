"""New-build detection: look up each subscription's branch head with
``git ls-remote``; a head this rig has not built yet becomes a queued build,
sent to the rig's own queue (``rig.<name>``) by task name."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django_celery_beat.models import CrontabSchedule, PeriodicTask

from leaderboard.celery import app as celery_app
from leaderboard.core.errors import ApplicationError
from leaderboard.core.queues import rig_task_send
from leaderboard.regressions.models import BuildRecord, BuildRun, ReferenceConfig, Subscription
from leaderboard.regressions.states import BuildRunRole, BuildRunStatus, BuildStatus, build_move
from leaderboard.regressions.verdict import MIN_NOISE_RUNS
from runners.builds.gitrepo import GitError, ls_remote
from runners.delivery.nightly_schema import DispatchBuild, DispatchRun, NightlyDispatch

logger = logging.getLogger(__name__)

# Registered by the rig's worker (runners/builds/nightly.py); the service only names it.
NIGHTLY_RIG_TASK = "rigboard.nightly_build_and_bench"
# The beat entry (made by migration 0002, remade by nightly_schedule_ensure) and its task.
NIGHTLY_SCHEDULE_NAME = "nightly regression"
NIGHTLY_TASK = "regressions.nightly_check"
# The service-side task the rig sends its report to (leaderboard/regressions/tasks.py).
BUILD_REPORT_TASK = "regressions.build_report"


@dataclass(frozen=True)
class CheckResult:
    subscription_id: int
    head: str | None
    build: BuildRecord | None
    reason: str


def build_dispatch_spec(*, build: BuildRecord) -> dict[str, Any]:
    """Return the JSON the rig's nightly task receives (runners/delivery/nightly_schema.py's
    NightlyDispatch): what to build, and one runner config per run not yet
    reported (each reference configuration and repeat; later, a confirmation's
    runs only) with the run uuid to post under and its role. No secrets: the
    rig has its own token."""
    sub = build.subscription
    dispatch = NightlyDispatch(
        build=DispatchBuild(
            id=build.pk, repo_url=sub.repo_url, commit=build.commit, flags=sub.build_flags, jobs=sub.build_jobs
        ),
        runs=[
            DispatchRun.model_validate(
                {
                    "build_run_id": br.pk,
                    "run_uuid": str(br.run_uuid),
                    "role": br.role,
                    "name": br.reference_config.name + _run_label(br),
                    "config": br.reference_config.spec,
                    # The A side of an A/B pair runs the baseline commit's binary.
                    "commit": br.run_commit or None,
                }
            )
            for br in build.build_runs.filter(status=BuildRunStatus.QUEUED).select_related("reference_config")
        ],
        rig=sub.rig.name,
        service_url=settings.RIGBOARD_PUBLIC_URL,
        report_task=BUILD_REPORT_TASK,
        report_queue=celery_app.conf.task_default_queue or "celery",
    )
    return dispatch.as_message()


def _run_label(build_run: BuildRun) -> str:
    """Return what the rig's log names a run by: its role and repeat ('' for the run judged)."""
    role, repeat = build_run.role, build_run.repeat
    if role == BuildRunRole.AB_A:
        return f" (A/B: A {build_run.run_commit[:10]}, run {repeat})"
    if role == BuildRunRole.AB_B:
        return f" (A/B: B, run {repeat})"
    if role == BuildRunRole.RERUN:
        return f" (re-run {repeat})"
    return f" (repeat {repeat})" if repeat else ""


def build_send(build: BuildRecord) -> bool:
    """Send the build's unreported runs to the rig's queue; return False (and
    log why) if the broker could not be reached."""
    try:
        # No time limit: the rig's build and benchmark carry their own timeouts.
        rig_task_send(
            task_name=NIGHTLY_RIG_TASK,
            spec=build_dispatch_spec(build=build),
            queue=build.subscription.rig.queue_name,
            task_id=build.celery_task_id,
            time_limit=None,
        )
    except Exception as exc:  # any broker error: the job never left, and says why
        logger.exception("could not queue build %s", build.pk)
        build.error = f"could not reach the Celery broker: {exc}"
        return False
    return True


def _dispatch(build: BuildRecord) -> None:
    if build_send(build):
        return
    with transaction.atomic():
        locked = BuildRecord.objects.select_for_update().get(pk=build.pk)
        if locked.status == BuildStatus.QUEUED:  # a report may have come first
            build_move(locked, BuildStatus.ERROR)
            locked.error, locked.finished_at = build.error, timezone.now()
            locked.save(update_fields=["status", "error", "finished_at"])


def runs_needed(*, reference_config: ReferenceConfig) -> int:
    """Return how many times a new nightly build runs ``reference_config``: once,
    or more while its earlier accepted builds hold fewer than MIN_NOISE_RUNS
    finished runs. A first build is thus benchmarked MIN_NOISE_RUNS times in
    the same job, so the second build is judged with a noise floor measured
    on the spot (A/A runs of one binary) instead of none."""
    history = (
        BuildRun.objects.nightly_history(reference_config=reference_config)
        .filter(status=BuildRunStatus.FINISHED)
        .count()
    )
    return max(1, MIN_NOISE_RUNS - history)


def build_queue(
    *, subscription: Subscription, commit: str, previous_commit: str = "", bisect_of: Any = None
) -> BuildRecord:
    """Store a queued build of ``commit`` with its BuildRuns (one per active
    reference config, more for a config without history: ``runs_needed``; a
    bisection build runs each once), and send it to the rig's queue once
    committed. Return the build. Raise ApplicationError if the subscription
    has no active reference config."""
    configs: Sequence[ReferenceConfig] = list(subscription.reference_configs.filter(is_active=True))
    if not configs:
        raise ApplicationError("the subscription has no active reference configuration", field="reference_configs")
    with transaction.atomic():
        build = BuildRecord.objects.create(
            subscription=subscription,
            commit=commit,
            previous_commit=previous_commit,
            bisect_of=bisect_of,
            celery_task_id=str(uuid.uuid4()),
        )
        if bisect_of is not None:
            runs = [BuildRun(build=build, reference_config=c, role=BuildRunRole.MIDPOINT) for c in configs]
        else:
            runs = [
                BuildRun(
                    build=build,
                    reference_config=c,
                    repeat=repeat,
                    role=BuildRunRole.NOISE if repeat else BuildRunRole.JUDGED,
                )
                for c in configs
                for repeat in range(runs_needed(reference_config=c))
            ]
        BuildRun.objects.bulk_create(runs)
        transaction.on_commit(lambda: _dispatch(build))
    return build


def subscription_check(*, subscription: Subscription) -> CheckResult:
    """Look up the branch head; queue a build if this rig never built it.

    Return what happened (``build`` is the new build, else None with the
    reason). An unreachable remote is logged in the reason, not raised: one
    broken subscription must not stop the others."""
    try:
        head = ls_remote(subscription.repo_url, subscription.branch)
    except GitError as exc:
        return CheckResult(subscription.pk, None, None, f"ls-remote failed: {exc}")
    subscription.last_checked_at = timezone.now()
    subscription.last_head = head or ""
    subscription.save(update_fields=["last_checked_at", "last_head"])
    if head is None:
        return CheckResult(subscription.pk, None, None, f"no branch {subscription.branch!r}")
    if BuildRecord.objects.filter(subscription=subscription, commit=head).exists():
        return CheckResult(subscription.pk, head, None, "already tested on this rig")
    previous = (
        BuildRecord.objects.filter(subscription=subscription, bisect_of__isnull=True, fanout_of__isnull=True)
        .order_by("-created_at", "-id")
        .values_list("commit", flat=True)
        .first()
    )
    try:
        build = build_queue(subscription=subscription, commit=head, previous_commit=previous or "")
    except ApplicationError as exc:
        return CheckResult(subscription.pk, head, None, exc.message)
    return CheckResult(subscription.pk, head, build, "queued")


def nightly_schedule_ensure() -> None:
    """Create the "nightly regression" PeriodicTask (03:00 UTC) if it is gone;
    an existing one, however staff edited it, is left alone."""
    nightly, _ = CrontabSchedule.objects.get_or_create(
        minute="0", hour="3", day_of_week="*", day_of_month="*", month_of_year="*", timezone="UTC"
    )
    PeriodicTask.objects.get_or_create(
        name=NIGHTLY_SCHEDULE_NAME,
        defaults={"task": NIGHTLY_TASK, "crontab": nightly, "enabled": True, "description": "New llama.cpp builds"},
    )


def subscriptions_check_all() -> list[CheckResult]:
    """Check every active subscription (the nightly beat task); return the results."""
    return [
        subscription_check(subscription=sub)
        for sub in Subscription.objects.filter(is_active=True).select_related("rig")
    ]

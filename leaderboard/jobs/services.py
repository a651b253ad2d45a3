"""Writes for benchmark jobs: queue one on its rig's Celery queue, move it
through its statuses as the rig reports, and give up on jobs whose worker died.

Status moves allowed (anything else is a 409):
  queued  -> running | finished | failed | aborted   (finished: the rig ran it
             while the service could not hear its "running")
           -> expired (the sweeper only: no worker took it before expires_at)
  running -> running (same attempt: progress) | finished | failed | aborted
  expired -> finished | failed | aborted   (a worker took it just before it
             expired but could not report; its final report is the truth. A
             worker asking to start an expired job gets 409 and does not run it)
A repeat of the status a job already has in the same attempt changes nothing,
so a rig may retry a report safely.

A job that has ended is told, in the transaction that stores it, to the apps
above jobs that act on its end (campaigns settle their trial and dispatch the
next: campaigns/apps.py). Jobs may not import them (the import layers), so each
names its handler once, at start-up, with ``job_end_handler_add``."""

from __future__ import annotations

import contextlib
import logging
import time
import uuid
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from leaderboard.celery import app as celery_app
from leaderboard.core.errors import ApplicationError
from leaderboard.core.queues import rig_task_send
from leaderboard.jobs.broker import job_message_in_broker
from leaderboard.jobs.models import RUN_BENCHMARK_TASK, BenchmarkJob, JobKind, JobStatus
from leaderboard.jobs.specs import spec_validate
from leaderboard.results.models import Rig, Run, RunStatus
from leaderboard.results.services.append import run_append
from runners.config import AttachConfig, ConfigError, RigConfig
from runners.delivery.stored import CLOSED_BY_ABORT

logger = logging.getLogger(__name__)

_ALLOWED: dict[str, frozenset[str]] = {
    JobStatus.QUEUED: frozenset({JobStatus.RUNNING, JobStatus.FINISHED, JobStatus.FAILED, JobStatus.ABORTED}),
    JobStatus.RUNNING: frozenset({JobStatus.RUNNING, JobStatus.FINISHED, JobStatus.FAILED, JobStatus.ABORTED}),
    JobStatus.EXPIRED: frozenset({JobStatus.FINISHED, JobStatus.FAILED, JobStatus.ABORTED}),
}


JobEndHandler = Callable[[BenchmarkJob], None]
_JOB_END_HANDLERS: list[JobEndHandler] = []


def job_end_handler_add(handler: JobEndHandler) -> None:
    """Have ``handler(job)`` called each time a job is stored ended (finished, failed,
    aborted or expired, and on a progress saved to an ended one), inside the
    transaction that stores it: what it does beyond the database it defers with
    ``transaction.on_commit``. Adding the same handler twice adds it once."""
    if handler not in _JOB_END_HANDLERS:
        _JOB_END_HANDLERS.append(handler)


def _job_saved(job: BenchmarkJob) -> None:
    if job.is_terminal:
        for handler in _JOB_END_HANDLERS:
            handler(job)


def job_time_limits(*, time_limit_s: int | None) -> tuple[int, int]:
    """Return (soft, hard) limits in seconds for a job: the hard limit asked for
    (or the default), capped by RIGBOARD_JOB_MAX_TIME_LIMIT_S; the soft limit
    leaves the task a tenth of it (30 s to 5 min) to stop the server and post
    what it measured. The rig enforces the soft limit; Celery gets only the hard one."""
    hard = time_limit_s or settings.RIGBOARD_JOB_DEFAULT_TIME_LIMIT_S
    if hard <= 0:
        raise ApplicationError("must be a positive number of seconds", field="time_limit_s")
    if hard > settings.RIGBOARD_JOB_MAX_TIME_LIMIT_S:
        raise ApplicationError(
            f"must be at most {settings.RIGBOARD_JOB_MAX_TIME_LIMIT_S} s (RIGBOARD_JOB_MAX_TIME_LIMIT_S)",
            field="time_limit_s",
        )
    margin = min(max(hard // 10, 30), 300)
    soft = max(hard - margin, max(hard // 2, 1))
    return soft, hard


def job_dispatch_spec(*, job: BenchmarkJob) -> dict[str, Any]:
    """Return the JSON the rig's task receives: ``job`` (what links the run to
    this job and bounds it) and ``config`` (the stored spec, in the runner's
    config shape). The rig's token is not in it: the rig has its own."""
    return {
        "job": {
            "id": job.pk,
            "kind": job.kind,
            "rig": job.rig.name,
            "run_uuid": str(job.run_uuid),
            "service_url": settings.RIGBOARD_PUBLIC_URL,
            "soft_time_limit_s": job.soft_time_limit_s,
            "time_limit_s": job.time_limit_s,
        },
        "config": job.spec,
    }


def _dispatch(job: BenchmarkJob) -> None:
    # Runs after the job row is committed, so the worker never reports on a job
    # the service cannot see yet. A broker that is down fails the job visibly.
    try:
        # The rig enforces the soft limit (job.soft_time_limit_s, in the spec)
        # itself, around the measuring only, and then stops llama-server and
        # delivers the run; the hard limit, above it by a tenth (30 s to 5 min),
        # still kills a hung worker (the rig delivers its run 5 s before it).
        rig_task_send(
            task_name=RUN_BENCHMARK_TASK,
            spec=job_dispatch_spec(job=job),
            queue=job.rig.queue_name,
            task_id=job.celery_task_id,
            time_limit=job.time_limit_s,
            expires=job.expires_at,
        )
    except Exception as exc:  # any broker/transport error: the job never left
        logger.exception("could not queue job %s", job.pk)
        failed: dict[str, Any] = {"status": JobStatus.FAILED, "error": f"could not reach the Celery broker: {exc}"}
        failed["finished_at"] = timezone.now()
        BenchmarkJob.objects.filter(pk=job.pk, status=JobStatus.QUEUED).update(**failed)
        # The caller holds this object (the API answers from it): it must not say queued.
        for name, value in failed.items():
            setattr(job, name, value)


def jobs_enqueue(
    *,
    rig: Rig,
    kind: str,
    spec: Mapping[str, Any],
    created_by: Any = None,
    time_limit_s: int | None = None,
    rerun_of: BenchmarkJob | None = None,
) -> BenchmarkJob:
    """Store a queued job and send it to ``rig.<name>`` once the row is committed.

    Raise ApplicationError naming the field if the kind or spec is invalid, or
    if no broker is configured. Return the job: status queued, or failed with
    the broker's error when the broker could not be reached (then the returned
    object says so too, once the row is committed: at once outside a transaction)."""
    if kind not in JobKind.values:
        raise ApplicationError(f"must be one of {', '.join(JobKind.values)}", field="kind")
    if not celery_app.conf.broker_url:
        raise ApplicationError("no Celery broker is configured (CELERY_BROKER_URL)", field="rig", status_code=503)
    clean_spec = spec_validate(kind=kind, spec=spec)
    soft, hard = job_time_limits(time_limit_s=time_limit_s)
    now = timezone.now()
    job = BenchmarkJob.objects.create(
        rig=rig,
        kind=kind,
        spec=clean_spec,
        soft_time_limit_s=soft,
        time_limit_s=hard,
        created_at=now,
        expires_at=now + timedelta(seconds=settings.RIGBOARD_JOB_QUEUE_TTL_S),
        created_by=created_by if getattr(created_by, "pk", None) else None,
        celery_task_id=str(uuid.uuid4()),
        rerun_of=rerun_of,
    )
    transaction.on_commit(lambda: _dispatch(job))
    return job


def job_run_again(*, job: BenchmarkJob, created_by: Any = None) -> BenchmarkJob:
    """Queue a new job with the same rig, kind, spec and time limit (and a new run uuid)."""
    return jobs_enqueue(
        rig=job.rig,
        kind=job.kind,
        spec=job.spec,
        created_by=created_by,
        time_limit_s=job.time_limit_s,
        rerun_of=job,
    )


def _run_close(run_uuid: uuid.UUID, status: str, reason: str, extra: Mapping[str, Any] | None = None) -> None:
    # The run may have been opened as running on the service; a job that ends
    # without the rig closing it must not leave it running forever.
    run = Run.objects.filter(uuid=run_uuid, status=RunStatus.RUNNING).first()
    if run is None:
        return
    with contextlib.suppress(ApplicationError):  # closed meanwhile by the rig: its account wins
        run_append(run=run, status=status, failure_reason=reason, extra=extra)


def job_status_update(
    *,
    job: BenchmarkJob,
    status: str,
    attempt: str = "",
    worker: str = "",
    progress: str = "",
    error: str = "",
    failure_kind: str = "",
    run_extra: Mapping[str, Any] | None = None,
) -> BenchmarkJob:
    """Move ``job`` to ``status`` and return it.

    A rig taking a queued job sends status running with its ``attempt`` id. A
    running report from a different attempt means the message was redelivered
    after the first worker was lost: that is a 409 (the job is not run twice)
    and the rig then reports it aborted. A job that ends failed or aborted also
    closes its run if that run is still open (``run_extra`` merged into the run's
    extra). ``failure_kind``: why it failed, as the rig named it (kept with ``error``).
    Raise ApplicationError (409) for a move not allowed from the current status."""
    if status not in JobStatus.values:
        raise ApplicationError(f"must be one of {', '.join(JobStatus.values)}", field="status")
    with transaction.atomic():
        locked = BenchmarkJob.objects.select_for_update().get(pk=job.pk)
        if locked.status == status and (status != JobStatus.RUNNING or locked.attempt == attempt):
            if progress and progress != locked.progress:
                locked.progress = progress[:500]
                locked.save(update_fields=["progress", "updated_at"])
                _job_saved(locked)
            return locked
        if status == JobStatus.RUNNING and locked.status == JobStatus.RUNNING:
            raise ApplicationError(
                f"job already started by attempt {locked.attempt} on {locked.worker or 'an unknown worker'}",
                field="status",
                status_code=409,
            )
        if status not in _ALLOWED.get(locked.status, frozenset()):
            raise ApplicationError(f"job is {locked.status}; cannot become {status}", field="status", status_code=409)
        now = timezone.now()
        locked.status = status
        if status == JobStatus.RUNNING:
            locked.attempt = attempt[:64]
            locked.worker = worker[:200]
            locked.started_at = now
        else:
            locked.finished_at = now
        if progress:
            locked.progress = progress[:500]
        if error:
            locked.error = error
        if failure_kind:
            locked.failure_kind = failure_kind
        locked.save()
        _job_saved(locked)
    if status in (JobStatus.FAILED, JobStatus.ABORTED):
        _run_close(locked.run_uuid, status, error or f"job {status}", run_extra)
    return locked


def job_abort(*, job: BenchmarkJob, reason: str) -> BenchmarkJob:
    """Abort a queued or running job (staff): revoke its task so a worker that
    has not started it drops it, mark it aborted, close its run. Raise
    ApplicationError (409) if the job already ended."""
    if BenchmarkJob.objects.filter(pk=job.pk, status=JobStatus.EXPIRED).exists():
        # Expired is an end: only the rig's own account of a run may still replace it.
        raise ApplicationError("job already expired (never picked up)", field="status", status_code=409)
    # The run closed here takes nothing more from its runner (run_append): the service's word stands.
    marker = {CLOSED_BY_ABORT: timezone.now().isoformat()}
    aborted = job_status_update(job=job, status=JobStatus.ABORTED, attempt=job.attempt, error=reason, run_extra=marker)
    # Even if the revoke is not seen (worker offline), the task asks the service
    # before starting and finds the job aborted.
    try:
        celery_app.control.revoke(job.celery_task_id)
    except Exception:  # the job is already aborted on the service; the revoke is a courtesy
        logger.warning("could not revoke task %s of job %s", job.celery_task_id, job.pk, exc_info=True)
    return aborted


def _duration_text(delta: timedelta) -> str:
    seconds = int(delta.total_seconds())
    if seconds % 3600 == 0:
        return f"{seconds // 3600} h"
    return f"{seconds // 60} min" if seconds % 60 == 0 else f"{seconds} s"


def job_expire(*, job: BenchmarkJob, now: datetime | None = None) -> BenchmarkJob | None:
    """Mark a queued job past its ``expires_at`` expired, with the reason; return it.
    Return None if it is no longer queued or not yet due (a worker took it meanwhile)."""
    now = now or timezone.now()
    with transaction.atomic():
        locked = BenchmarkJob.objects.select_for_update().select_related("rig").get(pk=job.pk)
        if locked.status != JobStatus.QUEUED or locked.expires_at > now:
            return None
        locked.status = JobStatus.EXPIRED
        locked.finished_at = now
        locked.error = (
            f"not picked up by rig {locked.rig.name} within {_duration_text(locked.queue_ttl)}: no worker "
            f"consumed {locked.rig.queue_name} before {locked.expires_at:%Y-%m-%d %H:%M:%S %Z}. "
            "Start the rig's worker, then run the job again."
        )
        locked.save(update_fields=["status", "finished_at", "error", "updated_at"])
        _job_saved(locked)
    return locked


def jobs_sweep_stuck(*, now: datetime | None = None, grace: timedelta | None = None) -> list[BenchmarkJob]:
    """Settle open jobs whose rig went silent and return the jobs changed.

    A queued or running job whose run has arrived finished / failed / aborted
    takes the run's status (the rig's own report was lost). A running job past
    its hard time limit plus ``grace`` (default RIGBOARD_JOB_GRACE_S) becomes
    aborted with the reason (its worker died), and its run, if open, is closed
    as aborted. So does, sooner, a running job with no run yet that has not
    reported for ``job_silence_limit`` (its worker died loading the server); a
    job whose run is open is settled once the run is (closed when silent, see
    leaderboard/results/services/silent.py). A queued job past its ``expires_at`` becomes expired (no worker
    of its rig took it in time); before that, a queued job is left alone: the
    rig may simply be offline for a while."""
    now = now or timezone.now()
    grace = grace if grace is not None else timedelta(seconds=settings.RIGBOARD_JOB_GRACE_S)
    changed = []
    for job in BenchmarkJob.objects.open().select_related("rig"):
        run = job.run
        if run is not None and run.status in (RunStatus.FINISHED, RunStatus.FAILED, RunStatus.ABORTED):
            settled = _job_settle_from_run(job, run)
            if settled is not None:
                changed.append(settled)
            continue
        if job.status == JobStatus.QUEUED:
            if job.expires_at <= now:
                expired = job_expire(job=job, now=now)
                if expired is not None:
                    changed.append(expired)
            continue
        if job.status != JobStatus.RUNNING:
            continue
        deadline = job.deadline(grace=grace)
        silence = job_silence_limit(job=job)
        if deadline is not None and deadline <= now:
            reason = (
                f"no report from worker {job.worker or '?'} within the job's {job.time_limit_s} s time limit "
                f"+ {int(grace.total_seconds())} s grace: the worker was lost (killed, restarted or offline)"
            )
        elif run is None and job.updated_at + silence <= now:
            reason = (
                f"no report from worker {job.worker or '?'} for {_duration_text(silence)} "
                f"(last: {job.progress or 'started'}) and no run opened: the worker was lost "
                "(killed, restarted or offline)"
            )
        else:
            continue
        try:
            changed.append(job_status_update(job=job, status=JobStatus.ABORTED, attempt=job.attempt, error=reason))
        except ApplicationError:
            continue  # the rig reported meanwhile
    return changed


def jobs_resend_lost() -> list[BenchmarkJob]:
    """Send again every queued job older than RIGBOARD_JOB_LOST_CHECK_S whose
    message the broker no longer has (see ``job_resend_if_lost``); return them."""
    now = timezone.now()
    waiting = BenchmarkJob.objects.filter(
        status=JobStatus.QUEUED,
        created_at__lte=now - timedelta(seconds=settings.RIGBOARD_JOB_LOST_CHECK_S),
        expires_at__gt=now,
    ).select_related("rig")
    resent = [job_resend_if_lost(job=job) for job in waiting]
    return [job for job in resent if job is not None]


def job_resend_if_lost(*, job: BenchmarkJob) -> BenchmarkJob | None:
    """Send a queued job again when its message is gone from the broker (a
    Redis restarted without persistence), and return it; return None when the
    message is there, the broker cannot tell, or the job left the queue meanwhile.
    The message is looked for twice, a second apart: a worker taking it holds
    it in neither place for a moment, and then reports the job running."""
    for attempt in range(2):
        if job_message_in_broker(queue=job.rig.queue_name, task_id=job.celery_task_id) is not False:
            return None
        if attempt == 0:
            time.sleep(1.0)
    with transaction.atomic():
        locked = BenchmarkJob.objects.select_for_update().select_related("rig").get(pk=job.pk)
        if locked.status != JobStatus.QUEUED:
            return None
        note = f"sent again at {timezone.now():%Y-%m-%d %H:%M:%S %Z}: its message was gone from the broker"
        locked.progress = f"{note} (was the broker restarted without persistence?)"[:500]
        locked.save(update_fields=["progress", "updated_at"])
    logger.warning("job %s: %s", locked.pk, note)
    _dispatch(locked)
    return locked


def job_silence_limit(*, job: BenchmarkJob) -> timedelta:
    """Return how long a running job that has not opened its run may go without
    a report before it is given up: the longest step the rig takes without one
    (the server's start, a repetition, a sweep point: the spec's limits, else the
    runner's defaults) plus RIGBOARD_RUN_SILENCE_S."""
    try:
        config = RigConfig.from_mapping(job.spec)
    except ConfigError:
        config = RigConfig(attach=AttachConfig(url="http://unknown"))
    steps = [config.workload.request_timeout_s]
    if config.server is not None:
        steps.append(config.server.startup_timeout_s)
    if config.sweep.enabled:
        steps.append(config.sweep.request_timeout_s)
    return timedelta(seconds=max(steps) + settings.RIGBOARD_RUN_SILENCE_S)


def _job_settle_from_run(job: BenchmarkJob, run: Run) -> BenchmarkJob | None:
    status = {RunStatus.FINISHED: JobStatus.FINISHED, RunStatus.FAILED: JobStatus.FAILED}.get(
        RunStatus(run.status), JobStatus.ABORTED
    )
    try:
        return job_status_update(job=job, status=status, attempt=job.attempt, error=run.failure_reason)
    except ApplicationError:
        return None  # the rig reported meanwhile

"""The rig-side Celery task: run one benchmark job and report it to the service.

Registered by name (``rigboard.run_benchmark``): the service sends it with
``send_task`` and a JSON spec, and never imports this module. The spec is
``{"job": {id, kind, rig, run_uuid, service_url, soft_time_limit_s,
time_limit_s}, "config": <runner config without service/run_uuid>}``.

What keeps a job from being silently lost:
- the job is reported running (with this delivery's attempt id) before any
  work, and finished / failed / aborted after; reports are retried;
- acks_late + reject_on_worker_lost: a worker that dies mid-job leaves the
  message to be redelivered; the redelivered attempt finds the job already
  running under another attempt and reports it aborted instead of running it
  twice;
- the runner opens its run on the service as running once the server is up
  and appends each repetition, so a worker killed outright leaves an open run
  with what it measured, which the service closes as aborted with the job;
- a soft time limit raises SoftTimeLimitExceeded inside the measuring (a
  SIGALRM here, so the solo pool, which ignores Celery's limits, has one too;
  the service sends no Celery soft limit, which a prefork pool would raise
  anywhere, delivery included): the runner stops the server and delivers the
  run as failed with the samples so far, outside the limit and before the hard
  limit, then the job is failed;
- a job staff abort mid-run stops on the rig too: the next append is refused
  (the service closed the run) or the next progress report is (the job ended),
  the measuring stops after the repetition in hand, the server is stopped, and
  the job is not reported again: the service's "aborted" stands;
- a run that could only be spooled keeps its job open (when closing the job
  would close the open run without the spooled samples): the service settles
  the job from the run when the spool reaches it;
- a worker killed outright (no redelivery yet, or never) is caught by the
  service's sweeper, which aborts running jobs silent past their hard limit.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import threading
import time
import uuid
from collections.abc import Iterator, Mapping
from typing import Any

import requests
from celery import Task
from celery.exceptions import SoftTimeLimitExceeded

from runners import pipeline
from runners.campaign.hooks import run_trial_job
from runners.celery_app import RigEnv, app
from runners.config import RigConfig
from runners.delivery.client import DeliveryOutcome
from runners.delivery.jobreport import JobConflict, JobReporter, ServiceUnreachable
from runners.delivery.live import EndedByService
from runners.delivery.schema import END_STATUSES
from runners.delivery.status_schema import JOB_END_STATUSES

logger = logging.getLogger(__name__)

TASK_NAME = "rigboard.run_benchmark"
# The run is delivered (posted or spooled) this long before the job's hard
# limit, which a prefork pool enforces by killing the task: time left for the
# job's own report.
DELIVERY_MARGIN_S = 5.0


class SpecError(ValueError):
    """The job spec is unusable; the message says which key and why."""


def job_config(spec: Mapping[str, Any], env: RigEnv) -> tuple[dict[str, Any], dict[str, Any]]:
    """Return (job, config): the job's envelope and the runner config with the
    rig's own service URL, token and name and the job's run uuid filled in.

    Raise SpecError if the spec lacks the job id or config, or names another rig
    than RIGBOARD_RIG."""
    job = spec.get("job")
    config = spec.get("config")
    if not isinstance(job, Mapping) or not isinstance(job.get("id"), int):
        raise SpecError("spec.job.id: required (the service's job id)")
    if not isinstance(config, Mapping):
        raise SpecError("spec.config: required (the runner config)")
    if env.rig and job.get("rig") and job["rig"] != env.rig:
        raise SpecError(f"spec.job.rig: job is for rig {job['rig']!r}, this worker is {env.rig!r}")
    service: dict[str, Any] = {
        "url": env.service_url or str(job.get("service_url") or ""),
        "token": env.token,
        "rig": env.rig or str(job.get("rig") or ""),
    }
    if env.spool_dir:
        service["spool_dir"] = env.spool_dir
    return dict(job), {**config, "service": service, "run_uuid": str(job.get("run_uuid") or "")}


@contextlib.contextmanager
def soft_deadline(seconds: float | None) -> Iterator[None]:
    """Raise SoftTimeLimitExceeded in this thread after ``seconds``.

    Only possible on the main thread (signals); elsewhere (a threads pool) it
    does nothing and Celery's own limits apply."""
    if not seconds or threading.current_thread() is not threading.main_thread():
        yield
        return

    def _expire(signum: int, frame: Any) -> None:
        raise SoftTimeLimitExceeded(f"soft time limit ({seconds:g} s) exceeded")

    previous = signal.signal(signal.SIGALRM, _expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _progress_text(stage: str, done: int, total: int) -> str:
    return f"{stage} {done}/{total}"


@app.task(
    bind=True,
    name=TASK_NAME,
    acks_late=True,
    reject_on_worker_lost=True,
    ignore_result=True,
)
def run_benchmark(self: Task, spec: dict[str, Any]) -> dict[str, Any]:
    """Run the job in ``spec`` and report it. Return a small summary
    ({job_id, status, ...}) for the worker's log; errors are reported to the
    service, not raised (the message is acknowledged either way)."""
    env = RigEnv.read()
    try:
        job, config = job_config(spec, env)
    except SpecError as exc:
        logger.error("rejected a job: %s", exc)
        return {"status": "rejected", "error": str(exc)}
    attempt = f"{self.request.id}:{uuid.uuid4().hex[:12]}"
    reporter = JobReporter(
        service_url=config["service"]["url"],
        token=env.token,
        job_id=job["id"],
        attempt=attempt[:64],
        worker=str(self.request.hostname or ""),
    )
    try:
        return _start(reporter, job, config)
    finally:
        reporter.close()


def _start(reporter: JobReporter, job: Mapping[str, Any], config: dict[str, Any]) -> dict[str, Any]:
    try:
        reporter.report("running", progress="started")
    except JobConflict as exc:
        return _not_twice(reporter, job, exc)
    except requests.HTTPError as exc:
        # A wrong or revoked token, or another rig's job: this worker cannot act for it.
        logger.error("job %s: the service refused this rig's report: %s", job["id"], exc)
        return {"job_id": job["id"], "status": "rejected", "error": str(exc)}
    except ServiceUnreachable as exc:
        # Run anyway: the runner spools the run and delivers it later, and the
        # service settles the job from its run when that arrives.
        logger.warning("job %s: could not report running (%s); running anyway", job["id"], exc)
    return _run(reporter, job, config)


def _not_twice(reporter: JobReporter, job: Mapping[str, Any], conflict: JobConflict) -> dict[str, Any]:
    current = conflict.job.get("status", "")
    if current != "running":
        logger.info("job %s is %s on the service; not running it", job["id"], current or "unknown")
        return {"job_id": job["id"], "status": "skipped", "reason": str(conflict)}
    run = conflict.job.get("run") or {}
    if run.get("status") in END_STATUSES:
        # The lost worker delivered its run before dying: the job ended as its run did.
        status, reason = run["status"], f"the worker was lost after delivering run {run.get('uuid')}"
    else:
        status = "aborted"
        reason = (
            f"the worker running this job was lost ({conflict}); its message was redelivered to "
            f"{reporter.worker or 'a worker'} and not run a second time. Run it again to retry."
        )
    with contextlib.suppress(JobConflict, ServiceUnreachable, requests.RequestException):
        reporter.report(status, error="" if status == "finished" else reason, progress=reason[:500])
    return {"job_id": job["id"], "status": status, "reason": reason}


def _run(reporter: JobReporter, job: Mapping[str, Any], config: dict[str, Any]) -> dict[str, Any]:
    started = time.monotonic()

    def progress(stage: str, done: int, total: int) -> None:
        reporter.progress(_progress_text(stage, done, total))
        if reporter.ended:
            # Staff aborted the job (or the service gave it up): measure no more.
            ended = reporter.ended
            raise EndedByService("job", str(ended.get("status")), str(ended.get("error") or ""))

    hard = job.get("time_limit_s")
    try:
        # A campaign trial's [trial] (perplexity, pruning) is honoured as the rig's CLI honours it.
        result = run_trial_job(
            config,
            progress=progress,
            guard=lambda: soft_deadline(job.get("soft_time_limit_s")),
            deliver_by=started + float(hard) - DELIVERY_MARGIN_S if hard else None,
        )
    except SoftTimeLimitExceeded as exc:
        # Raised before the server was up (a long flush or model load): nothing was measured.
        return _final(
            reporter,
            job,
            "failed",
            f"{pipeline.limit_text(exc)} before the run was measured",
            failure_kind=pipeline.failure_kind_of(exc),
        )
    except EndedByService as exc:
        # The job ended on the service before the server was up: its word stands.
        logger.info("job %s: %s; not run", job["id"], exc)
        return {"job_id": job["id"], "status": exc.status, "error": str(exc)}
    except Exception as exc:  # the job failed; the service must hear why, whatever it was
        logger.exception("job %s failed", job["id"])
        # The kind the rig knows (a server's own, a refused config) travels with it: the
        # service never re-reads it from the text.
        return _final(
            reporter, job, "failed", f"{type(exc).__name__}: {exc}", failure_kind=pipeline.failure_kind_of(exc)
        )
    if result.unsaved_json:
        # No directory took the run (full or read-only disks): the worker's log is the last place left.
        logger.error(
            "job %s: run %s could not be written anywhere: %s", job["id"], result.run_uuid, result.unsaved_json
        )
    if result.ended_by_service:
        return _ended_on_service(reporter, job, result)
    run_status = result.status
    status = run_status if run_status in END_STATUSES else "failed"
    error = "" if status == "finished" else result.failure_reason or run_status or "no status"
    delivered = result.delivered
    if delivered == DeliveryOutcome.SPOOLED and _redelivered(config, result.run_uuid):
        delivered = "posted from the spool"
    note = f"run {run_status}, {delivered}"
    if delivered == DeliveryOutcome.SPOOLED:
        note += f" on the rig ({result.delivery_detail}); it appears once the service takes it"
        if result.opened and status != "finished":
            # Failing the job now would close the open run without the samples
            # waiting in the spool; the service settles the job when the run arrives.
            return _final(reporter, job, "running", "", progress=note[:500], result=result)
    elif delivered == DeliveryOutcome.REJECTED:
        # The run was measured but the service refused it: the job did not produce a run.
        status = "failed"
        error = f"the service rejected the run: {result.delivery_detail}" + (f"; {error}" if error else "")
    kind = result.failure_kind if status == "failed" else ""
    return _final(reporter, job, status, error, progress=note[:500], result=result, failure_kind=kind)


def _ended_on_service(reporter: JobReporter, job: Mapping[str, Any], result: pipeline.JobResult) -> dict[str, Any]:
    """Return the summary of a job the service ended while its run was measured.

    Report nothing when the service holds the job ended: its status and reason
    (staff's "aborted", say) are the truth, and a report could only be refused
    or overwrite that reason. Only a job the service still holds open (its run
    was closed some other way) is reported aborted, with the runner's reason."""
    known = reporter.ended or reporter.fetch()
    status = str(known.get("status") or "")
    if status not in JOB_END_STATUSES:
        reason = result.failure_reason or result.ended_by_service
        return _final(reporter, job, "aborted", reason, result=result)
    logger.info("job %s is %s on the service: %s", job["id"], status, result.failure_reason)
    return {"job_id": job["id"], "status": status, "error": str(known.get("error") or ""), **_summary(result)}


def _summary(result: pipeline.JobResult | None) -> dict[str, Any]:
    return result.summary() if result is not None else {}


def _redelivered(config: Mapping[str, Any], run_uuid: str) -> bool:
    """Return True if one more flush of the spool delivered ``run_uuid`` (the
    service may be back already: the job's report is about to be tried)."""
    client = pipeline.client_for(RigConfig.from_mapping(config))
    if client is None:
        return False
    try:
        return run_uuid in client.flush().posted
    finally:
        client.close()


def _final(
    reporter: JobReporter,
    job: Mapping[str, Any],
    status: str,
    error: str,
    *,
    progress: str = "",
    result: pipeline.JobResult | None = None,
    failure_kind: str = "",
) -> dict[str, Any]:
    try:
        reporter.report(status, error=error, progress=progress, failure_kind=failure_kind)
    except (JobConflict, ServiceUnreachable, requests.RequestException) as exc:
        # The run itself (spooled if need be) still reaches the service, and the
        # service settles the job from it.
        logger.warning("job %s: could not report %s: %s", job["id"], status, exc)
    return {"job_id": job["id"], "status": status, "error": error, **_summary(result)}

"""The one entry point the CLI and the Celery task share: ``run_job(spec)``.

Order: re-post anything spooled, start (or attach to) the server, fingerprint,
open the run on the service as running, warmup + measured repetitions (each
appended to the open run), the context sweep (each point appended), stop the
server, close the run with everything (or spool the whole run). Errors in the
config or the server launch raise before anything is counted; anything that
goes wrong once the server is up gives a run closed as failed (or aborted on
Ctrl-C), never a lost one, and a runner killed outright leaves an open run with
the repetitions appended so far for the service to close. When the service
ends the run or its job meanwhile (staff abort it), the measuring stops after
the repetition in hand, the server is stopped, and only what the service still
lacks is sent.
"""

from __future__ import annotations

import contextlib
import json
import logging
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from celery.exceptions import SoftTimeLimitExceeded

from runners.config import RigConfig
from runners.delivery.client import Delivery, DeliveryOutcome, ServiceClient
from runners.delivery.live import LiveRun
from runners.files import write_atomically
from runners.pipeline.measurement import Guard, Measurement, Progress, failure_kind_of, limit_text, workload_of
from runners.pipeline.result import JobResult, job_result

__all__ = ["Guard", "JobResult", "Progress", "client_for", "failure_kind_of", "limit_text", "run_job"]

logger = logging.getLogger(__name__)


def client_for(config: RigConfig) -> ServiceClient | None:
    """Return the service client, None when no service URL is configured (measure only)."""
    if not config.service.url:
        return None
    service = config.service
    return ServiceClient(
        service.url, service.token, spool_dir=service.spool_dir, rig=service.rig, timeout_s=service.timeout_s
    )


def run_job(
    spec: Mapping[str, Any],
    *,
    progress: Progress | None = None,
    guard: Guard | None = None,
    deliver_by: float | None = None,
    on_sample: Callable[[dict[str, Any]], None] | None = None,
    extra: dict[str, Any] | None = None,
) -> JobResult:
    """Run one benchmark job described by a JSON-able ``spec`` (RigConfig's shape) and deliver it.

    Return a JobResult (status finished, failed or aborted). ``progress(stage,
    done, total)`` is called as stages advance (stage: flush, server, warmup,
    repetitions, sweep, post); it may raise EndedByService (the caller heard
    from the service that the job ended), as an append that the service refuses
    because it closed the run does: the measuring then stops after the
    repetition or sweep point in hand and the run ends aborted (status
    "aborted", "ended_by_service" saying why), sent only where the service still
    holds it open or never had it. ``guard()`` wraps the measuring: an exception it
    raises once the server is up (a time limit) ends the run as failed with what
    was measured; the server's stop and the delivery run after it. With
    ``deliver_by`` (time.monotonic()), the delivery's requests end by then and
    the run is spooled if the time is up. Raise ConfigError for a bad spec and
    runners.harness.server.ServerError when the server cannot be started or reached —
    in both cases nothing was measured or posted; an exception from ``guard``
    or EndedByService before the server is up is raised as well. ``on_sample(sample)``
    sees each measured repetition (the run document's sample) once it is kept;
    raising EndedByService there stops the measuring as the service's word does
    (a tuning campaign prunes a trial so). ``extra`` is merged into the run's
    ``extra`` as it is when the run is opened and when it is closed (a campaign
    trial's perplexity figures and pruning step)."""
    config = RigConfig.from_mapping(spec)
    workload = workload_of(config)
    run_uuid = config.run_uuid or str(uuid.uuid4())
    notify = progress or (lambda stage, done, total: None)
    client = client_for(config)
    live = LiveRun(client, run_uuid)
    try:
        measurement = Measurement(
            config=config,
            workload=workload,
            run_uuid=run_uuid,
            live=live,
            notify=notify,
            on_sample=on_sample,
            extra=extra if extra is not None else {},
        )
        payload = measurement.run(client, guard or contextlib.nullcontext)
        if config.output_path:
            _write_output(Path(config.output_path).expanduser(), payload)
        try:
            if measurement.ended is not None and not live.opened and not payload["samples"]:
                delivery = Delivery(
                    DeliveryOutcome.NOT_POSTED, detail=f"{measurement.ended}; nothing had been measured"
                )
            else:
                # An open run the service closed is not sent again (close() knows); one it
                # still holds open (the job ended before the run was opened) is finished
                # as aborted, and one it never had is posted with what was measured.
                delivery = live.close(payload, deliver_by=deliver_by)
        except SoftTimeLimitExceeded as exc:
            # A worker started with its own --soft-time-limit can interrupt here too;
            # the run must still not be lost.
            delivery = Delivery(DeliveryOutcome.UNREACHABLE, detail=f"delivery interrupted: {limit_text(exc)}")
            delivery = client.keep(payload, delivery) if client is not None else Delivery(DeliveryOutcome.NOT_POSTED)
        if measurement.ended is None and live.ended is None:
            notify("post", 1, 1)  # not for a run the service ended: nothing more to tell it
    finally:
        live.stop_heartbeat()
        if client is not None:
            client.close()
    return job_result(
        payload,
        delivery,
        opened=live.opened,
        live_detail=live.stopped,
        ended_by_service=str(measurement.ended or live.ended or ""),
        failure_kind=measurement.failure_kind,
        flushed=measurement.flushed,
        service_url=config.service.url,
    )


def _write_output(path: Path, payload: dict[str, Any]) -> None:
    # The extra copy the user asked for: a failure to write it (a full disk)
    # must not stop the run's delivery.
    try:
        write_atomically(path, json.dumps(payload, indent=1))
    except OSError as exc:
        logger.warning("could not write the run to %s (%s); delivering it anyway", path, exc)

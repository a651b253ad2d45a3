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
import datetime as dt
import json
import logging
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests
from celery.exceptions import SoftTimeLimitExceeded

from runners import stats
from runners.config import ConfigError, RigConfig
from runners.delivery.client import Delivery, ServiceClient
from runners.delivery.live import EndedByService, LiveRun
from runners.delivery.payload import build_payload
from runners.delivery.schema import payload_problems
from runners.files import write_atomically
from runners.harness import report
from runners.harness.concurrency import LevelResult, concurrency_table, run_concurrency
from runners.harness.fingerprint import capture
from runners.harness.power_source import PowerSource, open_power_source
from runners.harness.server import AttachedServer, LlamaServer, ServerHandle
from runners.harness.suite import SuiteResult, run_suite
from runners.harness.sweep import SweepPoint, run_sweep
from runners.harness.workload import Workload
from runners.stats import acceptance_pct, summarize

logger = logging.getLogger(__name__)

Progress = Callable[[str, int, int], None]
# Wraps the measuring (flush, server start, suite, sweep) but not the server's
# stop nor the delivery: the Celery task's soft time limit.
Guard = Callable[[], contextlib.AbstractContextManager[Any]]


@dataclass(frozen=True)
class JobResult:
    """What ``run_job`` measured and how it was delivered (every caller reads this one shape).

    ``status`` is finished, failed or aborted; ``delivered`` is posted, spooled,
    rejected, not_posted or closed_on_service, with the HTTP status
    (``http_status``), why (``delivery_detail``) and the spool file
    (``spool_path``, '' when none); delivered 'unsaved' when no directory could
    take the run. ``spool_fallback`` says why the run is not in the spool
    directory itself (it went to a fallback directory, or nowhere: 'unsaved'),
    '' otherwise; ``unsaved_json`` is the run when it is 'unsaved' (the caller
    must show it). ``opened``: the run was live on the service
    while measured; ``live_detail`` says why live updates stopped ('' if they
    did not); ``ended_by_service`` why the service stopped the run ('' when it
    did not). ``table``, ``summary_line`` and ``sweep_table`` are the texts a
    terminal prints; ``flushed`` what re-posting the spool did first (None
    without a service)."""

    run_uuid: str
    status: str
    failure_reason: str
    delivered: str
    http_status: int | None
    delivery_detail: str
    spool_path: str
    opened: bool
    live_detail: str
    ended_by_service: str
    n_samples: int
    decode_tokens_per_s_mean: float | None
    acceptance_pct: float | None
    table: str
    summary_line: str
    sweep_table: str
    flushed: dict[str, list[str]] | None
    spool_fallback: str = ""
    unsaved_json: str = ""
    concurrency_table: str = ""  # the concurrency levels' table ('' without a concurrency sweep)
    page_url: str = ""  # the stored run's page on the site ('' when the run was not stored)

    def summary(self) -> dict[str, Any]:
        """Return the few figures a job's log line carries."""
        return {
            "run_uuid": self.run_uuid,
            "delivered": self.delivered,
            "n_samples": self.n_samples,
            "decode_tokens_per_s_mean": self.decode_tokens_per_s_mean,
        }


def _workload(config: RigConfig) -> Workload:
    try:
        return Workload.from_config(config.workload)
    except KeyError as exc:
        raise ConfigError("workload.name", str(exc.args[0])) from exc


def _server(config: RigConfig, run_uuid: str) -> ServerHandle:
    if config.server is not None:
        cache_dir = Path(config.cache_dir).expanduser()
        return LlamaServer(
            config.server, log_dir=cache_dir / "logs" / run_uuid, state_dir=cache_dir / "servers"
        ).start()
    if config.attach is None:
        raise ConfigError("attach", "give [server] or [attach]")
    return AttachedServer(config.attach).start()


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
    workload = _workload(config)
    run_uuid = config.run_uuid or str(uuid.uuid4())
    notify = progress or (lambda stage, done, total: None)
    client = client_for(config)
    live = LiveRun(client, run_uuid)
    try:
        measurement = _Measurement(
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
                delivery = Delivery("not_posted", detail=f"{measurement.ended}; nothing had been measured")
            else:
                # An open run the service closed is not sent again (close() knows); one it
                # still holds open (the job ended before the run was opened) is finished
                # as aborted, and one it never had is posted with what was measured.
                delivery = live.close(payload, deliver_by=deliver_by)
        except SoftTimeLimitExceeded as exc:
            # A worker started with its own --soft-time-limit can interrupt here too;
            # the run must still not be lost.
            delivery = Delivery("unreachable", detail=f"delivery interrupted: {limit_text(exc)}")
            delivery = client.keep(payload, delivery) if client is not None else Delivery("not_posted")
        if measurement.ended is None and live.ended is None:
            notify("post", 1, 1)  # not for a run the service ended: nothing more to tell it
    finally:
        live.stop_heartbeat()
        if client is not None:
            client.close()
    return _result(payload, delivery, measurement, live, service_url=config.service.url)


@dataclass
class _Measurement:
    """One run being measured; what it holds survives an interruption."""

    config: RigConfig
    workload: Workload
    run_uuid: str
    live: LiveRun
    notify: Progress
    on_sample: Callable[[dict[str, Any]], None] | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    suite: SuiteResult = field(default_factory=SuiteResult)
    points: list[SweepPoint] = field(default_factory=list)
    levels: list[LevelResult] = field(default_factory=list)
    fingerprint: dict[str, Any] = field(default_factory=dict)
    flushed: dict[str, list[str]] | None = None
    server: ServerHandle | None = None
    started: dt.datetime | None = None  # once the server is up
    ended: EndedByService | None = None  # the service ended the run or its job mid-run

    def run(self, client: ServiceClient | None, guard: Guard) -> dict[str, Any]:
        """Measure and return the whole run document, status finished, failed or aborted."""
        interrupted = False
        log_tail = ""
        with open_power_source() as monitor, requests.Session() as session:
            try:
                with guard():
                    self.flushed = client.flush().as_dict() if client is not None else None
                    self.notify("flush", 1, 1)
                    self.server = _server(self.config, self.run_uuid)
                    self.notify("server", 1, 1)
                    self._measure(self.server, monitor, session)
            except KeyboardInterrupt:
                if self.server is None:
                    raise
                self.suite.status, self.suite.failure_reason, interrupted = "aborted", "interrupted by the user", True
            except EndedByService as exc:
                if self.server is None:
                    raise  # the job ended before the server was up: nothing to measure or send
                self.ended = exc
                self.suite.status, self.suite.failure_reason = "aborted", f"stopped: {exc} ({self._done()})"
            except Exception as exc:
                if self.server is None:
                    raise  # nothing was measured: a bad config, a server that never came up
                self.suite.status, self.suite.failure_reason = "failed", self._reason(exc)
            finally:
                if self.server is not None:
                    log_tail = self.server.log_tail()
                    self.server.stop()
            power_reason = monitor.reason
        assert self.server is not None  # noqa: S101 - whatever came before the server was up was re-raised
        finished = dt.datetime.now(dt.UTC)
        payload = self._payload(self.server, self.started or finished, finished, log_tail, power_reason)
        if interrupted:
            payload["extra"]["interrupted"] = True
        problems = payload_problems(payload) if client is not None else {}  # --no-post: no rig named
        if problems:
            # Delivered all the same: the service's answer decides, and a refused run is kept
            # in spool/rejected/ with it; this says why before the round trip does.
            logger.warning("the service will refuse this run: %s", problems)
        return payload

    def _measure(self, server: ServerHandle, monitor: PowerSource, session: requests.Session) -> None:
        self.started = started = dt.datetime.now(dt.UTC)
        # Attach mode learns the model file from the server (/props); launch mode from the config.
        model_path = server.model_path or (self.config.server.model if self.config.server else "")
        self.fingerprint = capture(
            monitor=monitor,
            engine=server.engine,
            build=server.build,
            model_path=model_path,
            cache_dir=self.config.cache_dir,
            server_binary=server.argv[0] if isinstance(server, LlamaServer) and server.argv else "",
        )
        self.live.open(self._payload(server, started, None, server.log_tail(), monitor.reason))
        if self.live.ended is not None:
            raise self.live.ended  # the service holds this run as ended already: it would keep nothing
        run_suite(
            server,
            self.workload,
            monitor=monitor,
            session=session,
            progress=self.notify,
            on_sample=self._sample,
            result=self.suite,
        )
        if self.suite.status == "finished" and self.config.sweep.enabled:
            _, reason = run_sweep(
                server,
                self.config.sweep,
                self.workload,
                monitor=monitor,
                session=session,
                progress=self.notify,
                on_point=lambda point: self._add(sweep_points=[point.payload()]),
                points=self.points,
            )
            if reason:
                self.suite.status, self.suite.failure_reason = "failed", reason
        if self.suite.status == "finished" and self.config.workload.concurrency_levels:
            # Levels travel with the run's close (the finish or the whole POST), not appended one by one.
            _, reason = run_concurrency(
                server,
                self.workload,
                levels=self.config.workload.concurrency_levels,
                requests_per_level=self.config.workload.requests_per_level,
                monitor=monitor,
                progress=self.notify,
                results=self.levels,
            )
            if reason:
                self.suite.status, self.suite.failure_reason = "failed", reason

    def _sample(self, sample: Any) -> None:
        payload = sample.payload()
        self._add(samples=[payload])
        if self.on_sample is not None:
            self.on_sample(payload)

    def _add(self, **measured: list[dict[str, Any]]) -> None:
        # Called once a repetition or sweep point is in hand (kept in the suite
        # or the points already): raising here stops the measuring after it.
        self.live.add(**measured)
        if self.live.ended is not None:
            raise self.live.ended

    def _done(self) -> str:
        done = f"{len(self.suite.samples)} of {self.workload.repetitions} repetitions measured"
        if self.config.workload.concurrency_levels:
            done += f", {len(self.levels)} of {len(set(self.config.workload.concurrency_levels))} concurrency levels"
        return done

    def _reason(self, exc: Exception) -> str:
        done = self._done()
        if isinstance(exc, SoftTimeLimitExceeded):
            return f"stopped by the job's time limit: {limit_text(exc)} ({done})"
        # A harness fault mid-run still delivers what was measured, with the reason.
        return f"runner error: {type(exc).__name__}: {exc} ({done})"

    def _payload(
        self,
        server: ServerHandle,
        started: dt.datetime,
        finished: dt.datetime | None,
        log_tail: str,
        power_reason: str | None,
    ) -> dict[str, Any]:
        payload = build_payload(
            config=self.config,
            run_uuid=self.run_uuid,
            status=self.suite.status if finished is not None else "running",
            failure_reason=self.suite.failure_reason if finished is not None else "",
            started_at=started,
            finished_at=finished,
            server=server,
            workload=self.workload,
            samples=self.suite.samples,
            warmups=self.suite.warmups,
            points=self.points,
            fingerprint=self.fingerprint,
            log_tail=log_tail,
            power_reason=power_reason,
            levels=self.levels,
        )
        payload["extra"].update(self.extra)
        return payload


def _write_output(path: Path, payload: dict[str, Any]) -> None:
    # The extra copy the user asked for: a failure to write it (a full disk)
    # must not stop the run's delivery.
    try:
        write_atomically(path, json.dumps(payload, indent=1))
    except OSError as exc:
        logger.warning("could not write the run to %s (%s); delivering it anyway", path, exc)


def limit_text(exc: SoftTimeLimitExceeded) -> str:
    """Return the time limit's message ("soft time limit (10 s) exceeded");
    billiard's str() of the exception is its repr."""
    return " ".join(map(str, exc.args)) or "soft time limit exceeded"


def _result(
    payload: dict[str, Any], delivery: Delivery, measurement: _Measurement, live: LiveRun, *, service_url: str
) -> JobResult:
    samples = payload["samples"]
    tps = [
        stats.decode_tokens_per_s(server=s["decode_tokens_per_s_server"], client=s["decode_tokens_per_s_client"])
        for s in samples
    ]
    summary = summarize([v for v in tps if v is not None])
    rows = [_Row(s, v) for s, v in zip(samples, tps, strict=True)]
    points = [_PointRow(p) for p in payload["sweep_points"]]
    return JobResult(
        run_uuid=payload["uuid"],
        status=payload["status"],
        failure_reason=payload["failure_reason"],
        delivered=delivery.outcome,
        http_status=delivery.status_code,
        delivery_detail=delivery.detail,
        spool_path=delivery.path,
        opened=live.opened,
        live_detail=live.stopped,
        ended_by_service=str(measurement.ended or live.ended or ""),
        n_samples=len(samples),
        decode_tokens_per_s_mean=summary.mean if summary else None,
        acceptance_pct=acceptance_pct([s["draft_n"] for s in samples], [s["draft_n_accepted"] for s in samples]),
        table=report.samples_table(rows),
        summary_line=report.summary_line(rows),
        sweep_table=report.sweep_table(points) if points else "",
        concurrency_table=concurrency_table(payload.get("concurrency_levels") or []),
        flushed=measurement.flushed,
        spool_fallback=delivery.fallback,
        unsaved_json=json.dumps(payload, sort_keys=True) if delivery.outcome == "unsaved" else "",
        page_url=_page_url(service_url, delivery),
    )


def _page_url(service_url: str, delivery: Delivery) -> str:
    """Return the stored run's page on the site (the service's answer names its path), '' when not stored."""
    path = (delivery.response or {}).get("page_url") if delivery.outcome == "posted" else None
    return f"{service_url.rstrip('/')}{path}" if isinstance(path, str) and path.startswith("/") else ""


class _Row:
    def __init__(self, sample: Mapping[str, Any], tps: float | None) -> None:
        self.index = int(sample["index"])
        self.decode_tokens_per_s = tps
        self.draft_n = sample["draft_n"]
        self.draft_n_accepted = sample["draft_n_accepted"]


class _PointRow:
    def __init__(self, point: Mapping[str, Any]) -> None:
        self.ctx_label = str(point["ctx_label"])
        self.prefill_tokens_per_s = point["prefill_tokens_per_s"]
        self.decode_tokens_per_s = point["decode_tokens_per_s"]
        self.ttft_ms = point["ttft_ms"]
        self.power_w = point["power_w"]
        self.note = str(point["note"])

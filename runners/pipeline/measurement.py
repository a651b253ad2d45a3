"""One run being measured: the server started (or attached), fingerprinted, the
run opened on the service, the repetitions, sweep and concurrency levels measured
and appended; what it holds survives an interruption (``run_job`` in __init__
delivers it)."""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests
from celery.exceptions import SoftTimeLimitExceeded

from runners.config import ConfigError, RigConfig
from runners.delivery.client import ServiceClient
from runners.delivery.live import EndedByService, LiveRun
from runners.delivery.payload import build_payload
from runners.delivery.schema import payload_problems
from runners.delivery.status_schema import FailureKind
from runners.harness.concurrency import LevelResult, run_concurrency
from runners.harness.contention import ContentionMeter, Gpus
from runners.harness.fingerprint import capture
from runners.harness.power_source import PowerSource, open_power_source
from runners.harness.server import AttachedServer, LlamaServer, ServerError, ServerHandle
from runners.harness.suite import SuiteResult, run_suite
from runners.harness.sweep import SweepPoint, run_sweep
from runners.harness.workload import Workload

logger = logging.getLogger(__name__)

Progress = Callable[[str, int, int], None]
# Wraps the measuring (flush, server start, suite, sweep) but not the server's
# stop nor the delivery: the Celery task's soft time limit.
Guard = Callable[[], contextlib.AbstractContextManager[Any]]


def workload_of(config: RigConfig) -> Workload:
    try:
        return Workload.from_config(config.workload)
    except KeyError as exc:
        raise ConfigError("workload.name", str(exc.args[0])) from exc


def server_of(config: RigConfig, run_uuid: str) -> ServerHandle:
    if config.server is not None:
        cache_dir = Path(config.cache_dir).expanduser()
        return LlamaServer(
            config.server, log_dir=cache_dir / "logs" / run_uuid, state_dir=cache_dir / "servers"
        ).start()
    if config.attach is None:
        raise ConfigError("attach", "give [server] or [attach]")
    return AttachedServer(config.attach).start()


@dataclass
class Measurement:
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
    failure_kind: str = ""  # why the run failed, when the runner can name it (FailureKind)

    def run(self, client: ServiceClient | None, guard: Guard) -> dict[str, Any]:
        """Measure and return the whole run document, status finished, failed or aborted."""
        interrupted = False
        log_tail = ""
        with open_power_source() as monitor, requests.Session() as session:
            try:
                with guard():
                    self.flushed = client.flush().as_dict() if client is not None else None
                    self.notify("flush", 1, 1)
                    self.server = server_of(self.config, self.run_uuid)
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
                self.failure_kind = failure_kind_of(exc)
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
        with self._contention(server):
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

    @contextlib.contextmanager
    def _contention(self, server: ServerHandle) -> Iterator[None]:
        """Record in ``extra["contention"]`` what else used the rig while the
        repetitions ran (runners/harness/contention.py), kept when they stop part
        way. An attached server is not this runner's process: its own CPU time could
        not be told from the others', so nothing is recorded and the reason is."""
        process = server.process if isinstance(server, LlamaServer) else None
        if process is None:
            self.extra["contention"] = {"reason": "the server is not this runner's process: its CPU is not told apart"}
            yield
            return
        gpus = Gpus()
        window = ContentionMeter(lambda: [process.pid], gpus=gpus).window()
        try:
            with window:
                yield
        finally:
            gpus.close()
            reading = getattr(window, "reading", None)  # none where the window never opened
            if reading is not None:
                self.extra["contention"] = {**reading.as_dict(), "over": "repetitions"}

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


def limit_text(exc: SoftTimeLimitExceeded) -> str:
    """Return the time limit's message ("soft time limit (10 s) exceeded");
    billiard's str() of the exception is its repr."""
    return " ".join(map(str, exc.args)) or "soft time limit exceeded"


def failure_kind_of(exc: BaseException) -> str:
    """Return the kind of a failure raised before anything was measured (``run_job``
    raises these): a server's own kind, a refused config, the job's time limit; ''
    for anything else."""
    if isinstance(exc, ServerError):
        return exc.kind
    if isinstance(exc, ConfigError):
        return FailureKind.BAD_CONFIG
    if isinstance(exc, SoftTimeLimitExceeded):
        return FailureKind.TIME_LIMIT
    return ""

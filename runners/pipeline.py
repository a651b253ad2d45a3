"""The one entry point the CLI and the Celery task share: ``run_job(spec)``.

Order: re-post anything spooled, start (or attach to) the server, fingerprint,
warmup + measured repetitions, the context sweep, stop the server, post the run
(or spool it). Errors in the config or the server launch raise before anything
is counted; anything that goes wrong after the first repetition started gives a
posted run with status failed (or aborted on Ctrl-C), never a lost one.
"""

from __future__ import annotations

import datetime as dt
import json
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import requests

from runners import report
from runners.client import Delivery, ServiceClient
from runners.config import ConfigError, RigConfig
from runners.fingerprint import capture
from runners.payload import build_payload
from runners.power import PowerMonitor
from runners.server import AttachedServer, LlamaServer, ServerHandle
from runners.stats import acceptance_pct, summarize
from runners.suite import SuiteResult, run_suite
from runners.sweep import SweepPoint, run_sweep
from runners.workload import Workload

Progress = Callable[[str, int, int], None]


def _workload(config: RigConfig) -> Workload:
    try:
        return Workload.from_config(config.workload)
    except KeyError as exc:
        raise ConfigError("workload.name", str(exc.args[0])) from exc


def _server(config: RigConfig, run_uuid: str) -> ServerHandle:
    if config.server is not None:
        log_dir = Path(config.cache_dir).expanduser() / "logs" / run_uuid
        return LlamaServer(config.server, log_dir=log_dir).start()
    if config.attach is None:
        raise ConfigError("attach", "give [server] or [attach]")
    return AttachedServer(config.attach).start()


def client_for(config: RigConfig) -> ServiceClient | None:
    """Return the service client, None when no service URL is configured (measure only)."""
    if not config.service.url:
        return None
    return ServiceClient(
        config.service.url, config.service.token, spool_dir=config.service.spool_dir, timeout_s=config.service.timeout_s
    )


def run_job(spec: Mapping[str, Any], *, progress: Progress | None = None) -> dict[str, Any]:
    """Run one benchmark job described by a JSON-able ``spec`` (RigConfig's shape) and deliver it.

    Return {"run_uuid", "status" (finished|failed|aborted), "failure_reason",
    "delivered" ("posted"|"spooled"|"rejected"|"not_posted"), "http_status",
    "delivery_detail", "spool_path", "n_samples", "decode_tokens_per_s_mean",
    "acceptance_pct", "table", "sweep_table", "flushed"}. ``progress(stage, done,
    total)`` is called as stages advance (stage: flush, server, warmup,
    repetitions, sweep, post). Raise ConfigError for a bad spec and
    runners.server.ServerError when the server cannot be started or reached —
    in both cases nothing was measured or posted."""
    config = RigConfig.from_mapping(spec)
    workload = _workload(config)
    run_uuid = config.run_uuid or str(uuid.uuid4())
    notify = progress or (lambda stage, done, total: None)
    client = client_for(config)
    flushed = client.flush().as_dict() if client is not None else None
    notify("flush", 1, 1)
    try:
        server = _server(config, run_uuid)
        notify("server", 1, 1)
        payload = _measure(config, workload, server, run_uuid, notify)
        if config.output_path:
            Path(config.output_path).expanduser().write_text(json.dumps(payload, indent=1))
        delivery = client.post_run(payload) if client is not None else Delivery("not_posted")
        notify("post", 1, 1)
    finally:
        if client is not None:
            client.close()
    return _result(payload, delivery, flushed)


def _measure(config: RigConfig, workload: Workload, server: ServerHandle, run_uuid: str, notify: Progress) -> dict:
    started = dt.datetime.now(dt.UTC)
    suite = SuiteResult()
    points: list[SweepPoint] = []
    fingerprint: dict[str, Any] = {}
    interrupted: BaseException | None = None
    with PowerMonitor() as monitor, requests.Session() as session:
        try:
            model_path = config.server.model if config.server else ""
            fingerprint = capture(
                monitor=monitor,
                engine=server.engine,
                build=server.build,
                model_path=model_path,
                cache_dir=config.cache_dir,
            )
            suite = run_suite(server, workload, monitor=monitor, session=session, progress=notify)
            if suite.status == "finished" and config.sweep.enabled:
                points, reason = run_sweep(
                    server, config.sweep, workload, monitor=monitor, session=session, progress=notify
                )
                if reason:
                    suite.status, suite.failure_reason = "failed", reason
        except KeyboardInterrupt as exc:
            suite.status, suite.failure_reason, interrupted = "aborted", "interrupted by the user", exc
        except Exception as exc:
            # A harness fault mid-run still delivers what was measured, with the reason.
            suite.status, suite.failure_reason = "failed", f"runner error: {type(exc).__name__}: {exc}"
        finally:
            log_tail = server.log_tail()
            server.stop()
        power_reason = monitor.reason
    payload = build_payload(
        config=config,
        run_uuid=run_uuid,
        status=suite.status,
        failure_reason=suite.failure_reason,
        started_at=started,
        finished_at=dt.datetime.now(dt.UTC),
        server=server,
        workload=workload,
        samples=suite.samples,
        warmups=suite.warmups,
        points=points,
        fingerprint=fingerprint,
        log_tail=log_tail,
        power_reason=power_reason,
    )
    if interrupted is not None:
        payload["extra"]["interrupted"] = True
    return payload


def _result(payload: dict[str, Any], delivery: Delivery, flushed: dict[str, list[str]] | None) -> dict[str, Any]:
    samples = payload["samples"]
    tps = [s["decode_tokens_per_s_server"] or s["decode_tokens_per_s_client"] for s in samples]
    summary = summarize([v for v in tps if v is not None])
    rows = [_Row(s, v) for s, v in zip(samples, tps, strict=True)]
    points = [_PointRow(p) for p in payload["sweep_points"]]
    return {
        "run_uuid": payload["uuid"],
        "status": payload["status"],
        "failure_reason": payload["failure_reason"],
        "delivered": delivery.outcome,
        "http_status": delivery.status_code,
        "delivery_detail": delivery.detail,
        "spool_path": delivery.path,
        "n_samples": len(samples),
        "decode_tokens_per_s_mean": summary.mean if summary else None,
        "acceptance_pct": acceptance_pct([s["draft_n"] for s in samples], [s["draft_n_accepted"] for s in samples]),
        "table": report.samples_table(rows),
        "summary_line": report.summary_line(rows),
        "sweep_table": report.sweep_table(points) if points else "",
        "flushed": flushed,
    }


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

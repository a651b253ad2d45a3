"""What ``run_job`` hands back: one ``JobResult`` (every caller reads this one shape),
made from the run document, its delivery and the measuring's end."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from runners.delivery.client import Delivery, DeliveryOutcome
from runners.pipeline.tables import result_tables


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
    # Why the run failed when the runner can name it (status_schema.FailureKind: time_limit), else ''.
    failure_kind: str = ""

    def summary(self) -> dict[str, Any]:
        """Return the few figures a job's log line carries."""
        return {
            "run_uuid": self.run_uuid,
            "delivered": self.delivered,
            "n_samples": self.n_samples,
            "decode_tokens_per_s_mean": self.decode_tokens_per_s_mean,
        }


def job_result(
    payload: dict[str, Any],
    delivery: Delivery,
    *,
    opened: bool,
    live_detail: str,
    ended_by_service: str,
    failure_kind: str,
    flushed: dict[str, list[str]] | None,
    service_url: str,
) -> JobResult:
    """Return the JobResult of a run document ``payload`` delivered as ``delivery``."""
    tables = result_tables(payload)
    return JobResult(
        run_uuid=payload["uuid"],
        status=payload["status"],
        failure_reason=payload["failure_reason"],
        delivered=delivery.outcome,
        http_status=delivery.status_code,
        delivery_detail=delivery.detail,
        spool_path=delivery.path,
        opened=opened,
        live_detail=live_detail,
        ended_by_service=ended_by_service,
        n_samples=len(payload["samples"]),
        decode_tokens_per_s_mean=tables.decode_tokens_per_s_mean,
        acceptance_pct=tables.acceptance_pct,
        table=tables.table,
        summary_line=tables.summary_line,
        sweep_table=tables.sweep_table,
        concurrency_table=tables.concurrency_table,
        flushed=flushed,
        spool_fallback=delivery.fallback,
        unsaved_json=json.dumps(payload, sort_keys=True) if delivery.outcome == DeliveryOutcome.UNSAVED else "",
        page_url=_page_url(service_url, delivery),
        failure_kind=failure_kind,
    )


def _page_url(service_url: str, delivery: Delivery) -> str:
    """Return the stored run's page on the site (the service's answer names its path), '' when not stored."""
    path = (delivery.response or {}).get("page_url") if delivery.outcome == DeliveryOutcome.POSTED else None
    return f"{service_url.rstrip('/')}{path}" if isinstance(path, str) and path.startswith("/") else ""

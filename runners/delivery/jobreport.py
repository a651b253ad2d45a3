"""The rig's side of a job's status: report running / finished / failed /
aborted to ``POST /api/jobs/{id}/status/`` with the rig's token.

A report is retried on connection errors and 5xx (the service restarting must
not strand a job as running); a 409 is the service saying the job cannot make
that move, e.g. another attempt already started it. A progress report that
gets a 409 because the job has ended (staff aborted it) records the job as the
service has it in ``ended``, so the caller can stop the benchmark."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any

import requests

from runners.delivery.status_schema import JOB_END_STATUSES, status_report

logger = logging.getLogger(__name__)

# Statuses a job never leaves for running: a progress report on one is refused.


class JobConflict(Exception):
    """The service refused the move (409); ``job`` is the job as the service has it (may be empty)."""

    def __init__(self, message: str, job: dict[str, Any]) -> None:
        super().__init__(message)
        self.job = job


class ServiceUnreachable(Exception):
    """The service did not answer (or answered 5xx) after every retry."""


@dataclass
class JobReporter:
    service_url: str
    token: str
    job_id: int
    attempt: str
    worker: str = ""
    retries: int = 5
    backoff_s: float = 1.0
    timeout_s: float = 15.0
    progress_every_s: float = 5.0
    # The job as the service had it when it refused a progress report because
    # the job had ended ({} while it runs): the service's word on the job.
    ended: dict[str, Any] = field(default_factory=dict)
    _last_progress: float = field(default=0.0, repr=False)
    _last_stage: str = field(default="", repr=False)
    _session: requests.Session = field(default_factory=requests.Session, repr=False)

    @property
    def _base(self) -> str:
        return f"{self.service_url.rstrip('/')}/api/jobs/{self.job_id}/"

    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Token {self.token}", "Accept": "application/json"}

    def report(
        self, status: str, *, error: str = "", progress: str = "", failure_kind: str = "", retries: int | None = None
    ) -> dict[str, Any]:
        """Send a status report (``failure_kind``: why it failed, when the rig can
        name it: status_schema.FailureKind); return the job as the service now has it.

        Raise JobConflict on 409, ServiceUnreachable when every retry failed,
        and requests.HTTPError for any other 4xx (a wrong token or rig)."""
        body = status_report(
            status, attempt=self.attempt, worker=self.worker, progress=progress, error=error, failure_kind=failure_kind
        )
        response = self._send("post", self._base + "status/", body, retries=retries)
        if response.status_code == 409:
            raise JobConflict(_error_text(response), self.fetch())
        response.raise_for_status()
        return response.json()

    def close(self) -> None:
        self._session.close()

    def fetch(self) -> dict[str, Any]:
        """Return the job as the service has it, or {} if it cannot be read."""
        try:
            response = self._send("get", self._base, None)
        except ServiceUnreachable:
            return {}
        return response.json() if response.ok else {}

    def progress(self, message: str) -> None:
        """Report progress on a running job: every new stage (the first word of
        ``message``), and within a stage at most every ``progress_every_s``. A
        failure to report progress never raises; a 409 because the job has
        ended (finished, failed, aborted, expired on the service) sets ``ended``."""
        if self.ended:
            return  # the service has said the job is over
        now = time.monotonic()
        stage = message.split(" ", 1)[0]
        if stage == self._last_stage and now - self._last_progress < self.progress_every_s:
            return
        self._last_progress, self._last_stage = now, stage
        try:
            # One try: a lost progress line is not worth stalling the benchmark.
            self.report("running", progress=message[:500], retries=1)
        except JobConflict as exc:
            if exc.job.get("status") in JOB_END_STATUSES:
                self.ended = exc.job
            # str(): a log handler holding the exception would hold its traceback,
            # and through it the HTTP connection to the service, open.
            logger.warning("job %s: progress not reported: %s", self.job_id, str(exc))
        except (ServiceUnreachable, requests.RequestException) as exc:
            logger.warning("job %s: progress not reported: %s", self.job_id, str(exc))

    def _send(
        self, method: str, url: str, body: dict[str, Any] | None, *, retries: int | None = None
    ) -> requests.Response:
        tries = retries or self.retries
        delay = self.backoff_s
        last: str = ""
        for attempt in range(tries):
            try:
                response = self._session.request(
                    method, url, json=body, headers=self._headers(), timeout=self.timeout_s
                )
            except requests.ConnectionError as exc:
                last = f"{type(exc).__name__}: {exc}"
            except requests.Timeout as exc:
                last = f"timed out: {exc}"
            else:
                if response.status_code < 500:
                    return response
                last = f"HTTP {response.status_code}"
            if attempt + 1 < tries:
                time.sleep(delay)
                delay *= 2
        raise ServiceUnreachable(f"{url}: {last}")


def _error_text(response: requests.Response) -> str:
    try:
        errors = response.json().get("errors", {})
    except ValueError:
        return response.text[:300]
    return "; ".join(f"{key}: {' '.join(map(str, value))}" for key, value in errors.items()) or response.reason

"""A run live on the service while it is measured (``LiveRun``): opened as
running once the server is up, extended after each repetition and sweep point,
closed at the end. The spooled document is always the whole run, and the
service completes an open run from it, so a close that fails loses nothing.
A run the service closed meanwhile (its job aborted) takes nothing more: the
runner stops measuring (``EndedByService``) and sends nothing else for it.

The requests go through ``ServiceClient`` (``client.py``), which spools the
whole run when the service cannot take it.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

import requests

from runners.delivery.client import Delivery, DeliveryOutcome, ServiceClient
from runners.delivery.schema import END_STATUSES

logger = logging.getLogger(__name__)

# Opening and appending are best effort between repetitions: a slow service
# must not hold the benchmark up for long.
LIVE_TIMEOUT_S = 10.0
# While a run is open, an empty append goes out this often (from a thread) when
# nothing else did: the service closes a run silent for RIGBOARD_RUN_SILENCE_S
# (5 min by default) as lost, and one repetition or sweep point may take longer.
HEARTBEAT_S = 60.0


class EndedByService(Exception):
    """The service ended the run, or its job, while the run was measured (staff
    aborted the job, or the service gave it up): it keeps nothing more, so the
    measuring stops. ``status`` is the status the service holds."""

    def __init__(self, what: str, status: str, reason: str = "") -> None:
        self.what, self.status, self.reason = what, status, reason
        super().__init__(f"the service ended the {what} as {status}" + (f": {reason}" if reason else ""))


# What the finish endpoint takes from the whole run document.
_FINISH_KEYS = (
    "status",
    "failure_reason",
    "server_log_tail",
    "finished_at",
    "extra",
    "samples",
    "sweep_points",
    "concurrency_levels",
)


class LiveRun:
    """One run as the service sees it while it is measured.

    ``open`` posts it as running (no samples); ``add`` appends each repetition
    or sweep point as it is measured; ``close`` finishes it with everything.
    Opening and appending are best effort: a failure is logged, what was not
    delivered is sent again with the next ``add``, an open that found the
    service down is tried again then, and the benchmark never stops for it.
    When the service answers that it has closed the run (a 409 to an append,
    or an open that finds it ended), ``ended`` says so and the caller stops
    measuring: the service keeps the samples it had and takes no more.
    ``close`` delivers the whole run (posted, else spooled or rejected), except
    to a run the service closed."""

    def __init__(self, client: ServiceClient | None, run_uuid: str) -> None:
        self.client = client
        self.run_uuid = run_uuid
        self.opened = False  # the service holds the run as running
        self.stopped = ""  # why live updates stopped (the service refused or closed the run)
        self.ended: EndedByService | None = None  # the service closed the run: measure no more
        self.appends_failed = 0
        self._document: dict[str, Any] = {}
        self._samples: list[dict[str, Any]] = []
        self._points: list[dict[str, Any]] = []
        self._pending_samples: list[dict[str, Any]] = []
        self._pending_points: list[dict[str, Any]] = []
        self._last_sent = 0.0  # time.monotonic() of the last request that reached the run
        self._beating = threading.Event()
        self._heart: threading.Thread | None = None

    def stop_heartbeat(self) -> None:
        """Stop the heartbeat thread (safe to call twice, or when none runs)."""
        self._beating.set()
        if self._heart is not None:
            self._heart.join(timeout=LIVE_TIMEOUT_S + 5)
            self._heart = None

    def _start_heartbeat(self, client: ServiceClient) -> None:
        if self._heart is not None:
            return
        self._last_sent = time.monotonic()
        self._heart = threading.Thread(
            target=self._beat, args=(client,), name=f"heartbeat-{self.run_uuid}", daemon=True
        )
        self._heart.start()

    def _beat(self, client: ServiceClient) -> None:
        # Its own session: requests' sessions are not shared between threads.
        with requests.Session() as session:
            session.headers.update(client.session.headers)
            while not self._beating.wait(timeout=min(HEARTBEAT_S / 4, 15.0)):
                if self.stopped or time.monotonic() - self._last_sent < HEARTBEAT_S:
                    continue
                self._last_sent = time.monotonic()
                try:
                    resp = session.post(
                        f"{client.url}/api/runs/{self.run_uuid}/samples/",
                        json={"samples": [], "sweep_points": []},
                        timeout=LIVE_TIMEOUT_S,
                    )
                except requests.RequestException as exc:
                    logger.info("run %s: heartbeat not delivered (%s)", self.run_uuid, exc)
                    continue
                if resp.status_code == 409:
                    return  # the service closed the run: the next append tells the measuring

    def open(self, document: Mapping[str, Any]) -> None:
        """Post ``document`` (the run with status running) to open the run on the service."""
        self._document = {**document, "status": "running", "samples": [], "sweep_points": []}
        if self.client is not None:
            self._open(self.client)

    def add(self, *, samples: Sequence[Mapping[str, Any]] = (), sweep_points: Sequence[Mapping[str, Any]] = ()) -> None:
        """Append measured samples / sweep points to the open run (best effort)."""
        self._samples += [dict(s) for s in samples]
        self._points += [dict(p) for p in sweep_points]
        self._pending_samples += [dict(s) for s in samples]
        self._pending_points += [dict(p) for p in sweep_points]
        if self.client is None or self.stopped or not self._document:
            return
        if not self.opened:
            self._open(self.client)  # the service was down at the start; it may be back
            return
        self._append(self.client)

    def close(self, payload: Mapping[str, Any], *, deliver_by: float | None = None) -> Delivery:
        """Deliver the whole run ``payload`` and return how.

        An open run is finished with ``POST /api/runs/{uuid}/finish/``; a run
        never opened, or one the service refused to finish (404, 400), is
        POSTed whole (the service completes or creates it, or says why not).
        A run the service has closed (a 409 to an append or to the finish: its
        job was aborted) is sent nothing: 'closed_on_service', and ``ended``
        says how the service ended it.
        If the service cannot be reached, the whole run is spooled. With
        ``deliver_by`` (a time.monotonic() deadline) every request is cut to the
        time left, and with none left the run goes straight to the spool."""
        client = self.client
        self.stop_heartbeat()
        if client is None:
            return Delivery(DeliveryOutcome.NOT_POSTED)
        if self.ended is not None:
            return self._closed_on_service()
        no_time = Delivery(DeliveryOutcome.UNREACHABLE, detail="no time left before the job's time limit")
        timeout = _time_left(client, deliver_by)
        if timeout is None:
            return client.keep(payload, no_time)
        if self.opened and not self.stopped:
            body = {key: payload[key] for key in _FINISH_KEYS if key in payload}
            finished = client.send(f"/api/runs/{self.run_uuid}/finish/", body, timeout_s=timeout)
            if finished.outcome != DeliveryOutcome.REJECTED:
                return client.keep(payload, client.checked(payload, finished))
            if finished.status_code == 409:
                # Closed on the service meanwhile: a whole POST would only get its account back.
                self.stopped = f"the service refused to finish the run: {finished.detail}"
                self.ended = self._ended(client, _time_left(client, deliver_by))
                return self._closed_on_service()
            logger.warning("run %s: finish refused (%s); posting the whole run", self.run_uuid, finished.detail)
            timeout = _time_left(client, deliver_by)
            if timeout is None:
                return client.keep(payload, no_time)
        delivery = client.post_run(payload, timeout_s=timeout)
        stored = (delivery.response or {}).get("status")
        if delivery.outcome == DeliveryOutcome.POSTED and stored and stored != payload.get("status"):
            # The service had ended the run already (its job was aborted): it keeps its own account.
            detail = f"the service had already ended this run as {stored}; it kept the samples it had"
            return Delivery(DeliveryOutcome.POSTED, delivery.status_code, detail, delivery.response)
        return delivery

    def _open(self, client: ServiceClient) -> None:
        document = {**self._document, "samples": self._samples, "sweep_points": self._points}
        opened = client.send("/api/runs/", document, timeout_s=min(client.timeout_s, LIVE_TIMEOUT_S))
        if opened.outcome == DeliveryOutcome.UNREACHABLE:
            logger.warning("run %s: could not open it on the service (%s); will retry", self.run_uuid, opened.detail)
            return
        if opened.outcome == DeliveryOutcome.REJECTED:
            self.stopped = f"the service refused to open the run: {opened.detail}"
            logger.warning("run %s: %s", self.run_uuid, self.stopped)
            return
        stored = opened.response or {}
        status = stored.get("status")
        if status != "running":
            self.stopped = f"the service already holds this run as {status}"
            if status in END_STATUSES:
                self.ended = EndedByService("run", str(status), str(stored.get("failure_reason") or ""))
            logger.warning("run %s: %s", self.run_uuid, self.stopped)
            return
        self.opened = True
        self._start_heartbeat(client)
        if opened.status_code == 200 and (self._pending_samples or self._pending_points):
            # The run was already open (an earlier open got through unanswered): append what it lacks.
            self._append(client)
        else:
            self._pending_samples, self._pending_points = [], []

    def _append(self, client: ServiceClient) -> None:
        if not self._pending_samples and not self._pending_points:
            return
        body = {"samples": self._pending_samples, "sweep_points": self._pending_points}
        timeout = min(client.timeout_s, LIVE_TIMEOUT_S)
        appended = client.send(f"/api/runs/{self.run_uuid}/samples/", body, timeout_s=timeout)
        if appended.outcome == DeliveryOutcome.POSTED:
            self._last_sent = time.monotonic()
            self._pending_samples, self._pending_points = [], []
            return
        self.appends_failed += 1
        if appended.outcome == DeliveryOutcome.REJECTED:
            # 409: the run was closed on the service (its job aborted); 404/400: it will not take these.
            self.stopped = f"the service refused the samples: {appended.detail}"
            if appended.status_code == 409:
                self.ended = self._ended(client, timeout)
        logger.warning("run %s: samples not appended (%s)", self.run_uuid, appended.detail)

    def _closed_on_service(self) -> Delivery:
        # The service would only answer with the run it already holds.
        return Delivery(
            DeliveryOutcome.CLOSED_ON_SERVICE, 409, f"{self.ended}; it keeps the samples it had, nothing more was sent"
        )

    def _ended(self, client: ServiceClient, timeout_s: float | None) -> EndedByService:
        """Return why the service closed the run, as it tells (status and reason);
        'aborted' when it cannot be asked, or not within ``timeout_s`` (None: no
        time left), since the service closes a job's run when it aborts the job."""
        stored: dict[str, Any] = {}
        if timeout_s is not None:
            with contextlib.suppress(requests.RequestException, ValueError):
                stored = client.get_run(self.run_uuid, timeout_s=min(timeout_s, LIVE_TIMEOUT_S))
        status = str(stored.get("status") or "")
        if status not in END_STATUSES:
            return EndedByService("run", "aborted", self.stopped)
        return EndedByService("run", status, str(stored.get("failure_reason") or ""))


def _time_left(client: ServiceClient, deliver_by: float | None) -> float | None:
    """Return the timeout for the next request: the client's, cut to the time
    left before ``deliver_by``; None when less than a second is left."""
    if deliver_by is None:
        return client.timeout_s
    left = deliver_by - time.monotonic()
    return min(client.timeout_s, left) if left >= 1.0 else None

"""Delivery to the service that loses nothing.

A run is POSTed with the rig's token and its client-generated uuid (the
service's idempotency key). On a connection error, a timeout, 5xx or 429 the
run JSON is written to the spool directory and re-posted later — before the
next run and by ``python -m runners flush``; a repeated POST of the same uuid
creates nothing twice. A 4xx (other than 429) will not get better by retrying:
the run moves to ``spool/rejected/`` with the service's answer, kept for a human.

Each rig spools under a directory of its own (``spool_dir/<rig>``, and the same
in each fallback directory; ``stored.spool_key``): rigs sharing a host never
flush each other's runs, and a flush leaves a run the service says belongs to
another rig (403) where it is. A run is only taken out of the spool when the
service's answer shows it stored (``stored.stored_shortfall``): a 2xx that shows
it still open, or without some of its samples, keeps it for the next flush.

A spool that cannot be written (a full disk, a read-only directory) does not
lose the run: it goes to the first of ``fallback_dirs()`` that takes it (the
system's temp directory, then the user's home), which ``flush`` also empties,
and the delivery says where and why (``Delivery.fallback``). When no place takes
it, the delivery is 'unsaved' and the caller prints the run (the CLI on stdout,
the rig's worker in its log). A spooled file that is not a run (cut short by a
crash, edited by hand) is moved to ``spool/quarantine/`` with the reason, and
the flush carries on with the others.

While it is measured, a run is also live on the service (``LiveRun``): opened
as running once the server is up, extended after each repetition and sweep
point, closed at the end. The spooled document is always the whole run, and
the service completes an open run from it, so a close that fails loses nothing.
A run the service closed meanwhile (its job aborted) takes nothing more: the
runner stops measuring (``EndedByService``) and sends nothing else for it.
"""

from __future__ import annotations

import contextlib
import html
import json
import logging
import re
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests

from runners.delivery.stored import spool_key, stored_shortfall
from runners.env import spool_fallback_dirs
from runners.files import write_atomically

logger = logging.getLogger(__name__)

_RETRY_STATUSES = {408, 429}
_ENDED = ("finished", "failed", "aborted")
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


@dataclass(frozen=True)
class Delivery:
    """How one request or run was delivered: 'posted', 'spooled' or 'rejected'
    ('unreachable' for a request that is not spooled: open, append, finish;
    'closed_on_service' for a run the service had closed, to which nothing was sent;
    'unsaved' for a run that neither the service nor any directory took).
    ``fallback`` says why the run is not in the spool directory itself (empty when it is)."""

    outcome: str
    status_code: int | None = None
    detail: str = ""
    response: Mapping[str, Any] | None = None
    path: str = ""
    fallback: str = ""


class SpoolWriteError(OSError):
    """No directory could take the run; ``errors`` says why, place by place."""

    def __init__(self, errors: Sequence[str]) -> None:
        super().__init__("; ".join(errors))
        self.errors = list(errors)


def fallback_dirs() -> list[Path]:
    """Return where a run goes when its spool directory cannot take it, in order:
    the system's temp directory (often another filesystem), then the user's home;
    RIGBOARD_SPOOL_FALLBACK_DIRS (paths separated by ``os.pathsep``) replaces them."""
    given = spool_fallback_dirs()
    if given:
        return given
    return [Path(tempfile.gettempdir()) / "rigboard-spool", Path.home() / "rigboard-spool"]


@dataclass
class FlushResult:
    """What a flush did: uuids posted, rejected, still waiting (the service is
    away, did not store all of the run yet, or says it is another rig's), and
    the spool files it quarantined as "<path>: <reason>"."""

    posted: list[str] = field(default_factory=list)
    rejected: list[str] = field(default_factory=list)
    remaining: list[str] = field(default_factory=list)
    quarantined: list[str] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        """True when every spooled run was delivered: nothing rejected,
        nothing left waiting, nothing quarantined."""
        return not (self.rejected or self.remaining or self.quarantined)

    def as_dict(self) -> dict[str, list[str]]:
        return {
            "posted": self.posted,
            "rejected": self.rejected,
            "remaining": self.remaining,
            "quarantined": self.quarantined,
        }


class ServiceClient:
    """Posts a rig's runs with its token; spools them under ``spool_dir/<rig>``
    (``spool_key``: the rig's name, else its token's digest)."""

    def __init__(self, url: str, token: str, *, spool_dir: str | Path, rig: str = "", timeout_s: float = 30.0) -> None:
        self.url = url.rstrip("/")
        self.token = token
        self.spool_root = Path(spool_dir).expanduser()
        self.spool_key = spool_key(rig=rig, token=token)
        self.spool_dir = self.spool_root / self.spool_key
        self.timeout_s = timeout_s
        self.session = requests.Session()
        self.session.headers.update({"Authorization": f"Token {token}", "Accept": "application/json"})

    @property
    def rejected_dir(self) -> Path:
        return self.spool_dir / "rejected"

    @property
    def quarantine_dir(self) -> Path:
        return self.spool_dir / "quarantine"

    def close(self) -> None:
        self.session.close()

    def send(self, path: str, body: Mapping[str, Any], *, timeout_s: float | None = None) -> Delivery:
        """POST ``body`` to ``path`` (under the service URL) and return 'posted'
        (200/201), 'unreachable' (no answer, 5xx, 408, 429: worth retrying) or
        'rejected' (any other answer). Never raises for the service's faults."""
        try:
            resp = self.session.post(f"{self.url}{path}", json=body, timeout=timeout_s or self.timeout_s)
        except requests.RequestException as exc:
            return Delivery("unreachable", detail=f"service unreachable: {exc}")
        try:
            body_in = resp.json()
        except ValueError:
            body_in = None
        if resp.status_code in (200, 201):
            return Delivery("posted", status_code=resp.status_code, response=body_in)
        detail = f"HTTP {resp.status_code}: " + (json.dumps(body_in) if body_in is not None else answer_text(resp))
        if resp.status_code >= 500 or resp.status_code in _RETRY_STATUSES:
            return Delivery("unreachable", status_code=resp.status_code, detail=detail)
        return Delivery("rejected", status_code=resp.status_code, detail=detail)

    def post_run(self, payload: Mapping[str, Any], *, timeout_s: float | None = None) -> Delivery:
        """POST one run; spool it or move it to rejected when that fails, and
        spool it when the answer does not show it stored. Never raises for the service's faults."""
        return self.keep(payload, self.checked(payload, self.send("/api/runs/", payload, timeout_s=timeout_s)))

    @staticmethod
    def checked(payload: Mapping[str, Any], delivery: Delivery) -> Delivery:
        """Return ``delivery``, or 'unreachable' (worth sending again) when it
        was posted but the answer does not show ``payload`` stored."""
        if delivery.outcome != "posted":
            return delivery
        shortfall = stored_shortfall(payload, delivery.response)
        if not shortfall:
            return delivery
        logger.warning(
            "run %s: answered %s but %s; kept to send again", payload.get("uuid"), delivery.status_code, shortfall
        )
        return Delivery("unreachable", delivery.status_code, shortfall, delivery.response)

    def fallbacks(self) -> list[Path]:
        """Return this rig's own directory in each of ``fallback_dirs()``."""
        return [place / self.spool_key for place in fallback_dirs()]

    def keep(self, payload: Mapping[str, Any], delivery: Delivery) -> Delivery:
        """Return ``delivery`` for the whole run ``payload``, having written the
        run to the spool (unreachable) or to rejected/ (rejected) first. Where
        that directory cannot take it, the run goes to a fallback directory
        (``fallback`` says why); where none can, the outcome is 'unsaved'."""
        if delivery.outcome not in ("unreachable", "rejected"):
            return delivery
        outcome = "spooled" if delivery.outcome == "unreachable" else "rejected"
        places = [self.spool_dir, *self.fallbacks()]
        if outcome == "rejected":
            places = [place / "rejected" for place in places]
        record = delivery if outcome == "rejected" else None
        try:
            path, fallback = self._write_somewhere(places, payload, record)
        except SpoolWriteError as exc:
            detail = f"{delivery.detail}; the run could not be written anywhere: {exc}"
            logger.error("run %s: %s", payload.get("uuid"), detail)
            return Delivery("unsaved", delivery.status_code, detail, fallback=str(exc))
        return Delivery(outcome, delivery.status_code, delivery.detail, path=str(path), fallback=fallback)

    def flush(self) -> FlushResult:
        """Re-post every spooled run of this rig (its spool directory's and its
        fallback directories', and any spooled before spools were kept per rig),
        oldest first; stop at the first the service cannot be reached for. A
        file that is not a run is quarantined and skipped; a run the service
        does not show stored, or says is another rig's (403), stays where it is."""
        result = FlushResult()
        pending = sorted(self._pending(), key=_mtime)
        for index, path in enumerate(pending):
            payload = self._read(path, result)
            if payload is None:
                continue
            sent = self.send("/api/runs/", payload)
            delivery = self.checked(payload, sent)
            if delivery.outcome == "posted":
                _remove(path)
                result.posted.append(payload["uuid"])
            elif sent.outcome == "posted" or delivery.status_code == 403:
                # Not all stored yet, or another rig's run (one spooled before
                # spools were kept per rig): left where it is, for its rig.
                logger.warning("spooled run %s left in %s: %s", payload["uuid"], path.parent, delivery.detail)
                result.remaining.append(payload["uuid"])
            elif delivery.outcome == "rejected":
                if self.keep(payload, delivery).outcome == "rejected":
                    _remove(path)
                result.rejected.append(payload["uuid"])
            else:
                # The service is still down: later runs would fail the same way.
                result.remaining += [p.stem for p in pending[index:] if p.is_file()]
                break
        return result

    def spooled(self) -> list[str]:
        """Return the uuids waiting in the spool (its directory and the fallback directories)."""
        return sorted(p.stem for p in self._pending())

    def _pending(self) -> list[Path]:
        found: dict[Path, Path] = {}  # by resolved path: a fallback may be the spool directory itself
        # This rig's own directories, then the roots, where runs of any rig on
        # the host were spooled before each rig had its own directory.
        own = (self.spool_dir, *self.fallbacks())
        for directory in (*own, self.spool_root, *fallback_dirs()):
            with contextlib.suppress(OSError):
                found.update((p.resolve(), p) for p in directory.glob("*.json") if p.is_file())
        return list(found.values())

    def _read(self, path: Path, result: FlushResult) -> dict[str, Any] | None:
        """Return the run spooled at ``path``; None (and the file quarantined,
        or left where it is when it cannot be read) when it is not one."""
        try:
            data = json.loads(path.read_bytes())
        except FileNotFoundError:
            return None  # another flush delivered it meanwhile
        except OSError as exc:
            logger.warning("spooled run %s cannot be read (%s); left where it is", path, exc)
            return None
        except ValueError as exc:  # cut short, not UTF-8, not JSON
            self._quarantine(path, f"not valid JSON ({exc})", result)
            return None
        if not isinstance(data, dict) or not isinstance(data.get("uuid"), str):
            self._quarantine(path, "not a run (a JSON object with a uuid)", result)
            return None
        return data

    def _quarantine(self, path: Path, reason: str, result: FlushResult) -> None:
        # Beside the file: a file in a root (spooled before spools were kept per
        # rig) may be another rig's, and stays in that rig's reach.
        quarantine_dir = path.parent / "quarantine"
        target = quarantine_dir / path.name
        try:
            quarantine_dir.mkdir(parents=True, exist_ok=True)
            path.replace(target)
        except OSError as exc:
            target = path
            reason += f"; could not move it to {quarantine_dir} ({exc}), skipped"
        logger.warning("spooled file %s quarantined: %s", target, reason)
        result.quarantined.append(f"{target}: {reason}")

    def get_run(self, run_uuid: str, *, timeout_s: float | None = None) -> dict[str, Any]:
        """Return the stored run's detail; raise requests.HTTPError when it is not there."""
        resp = self.session.get(f"{self.url}/api/runs/{run_uuid}/", timeout=timeout_s or self.timeout_s)
        resp.raise_for_status()
        return dict(resp.json())

    def _write_somewhere(
        self, places: Sequence[Path], payload: Mapping[str, Any], delivery: Delivery | None
    ) -> tuple[Path, str]:
        """Write the run to the first of ``places`` that takes it; return (its
        path, why the places before it did not, '' for the first). Raise
        SpoolWriteError when none does."""
        errors: list[str] = []
        for place in places:
            try:
                path = self._write(place, payload, delivery)
            except OSError as exc:
                errors.append(f"{place}: {exc.strerror or exc}")
                continue
            if errors:
                logger.warning("run %s written to %s: %s", payload.get("uuid"), path, "; ".join(errors))
            return path, "; ".join(errors)
        raise SpoolWriteError(errors)

    @staticmethod
    def _write(directory: Path, payload: Mapping[str, Any], delivery: Delivery | None) -> Path:
        directory.mkdir(parents=True, exist_ok=True)
        target = directory / f"{payload['uuid']}.json"
        data: Any = payload
        if delivery is not None:
            data = {"payload": payload, "status_code": delivery.status_code, "error": delivery.detail}
        # A crash mid-write must not leave a truncated run, and a write that fails
        # (a full disk) leaves no temp file behind.
        write_atomically(target, json.dumps(data, indent=1, sort_keys=True))
        return target


_TITLE = re.compile(r"<title[^>]*>(.*?)</title>", re.I | re.S)


def answer_text(resp: requests.Response) -> str:
    """Return a one-line account of a non-JSON answer: an HTML page (a proxy's
    error page, a debug page) by its title, anything else by its first line."""
    text = resp.text or ""
    if "html" in resp.headers.get("Content-Type", "") or text.lstrip()[:15].lower().startswith(("<!doctype", "<html")):
        title = _TITLE.search(text)
        summary = html.unescape(" ".join(title.group(1).split())) if title else "no title"
        return f"an HTML page ({summary[:200]})"
    first = text.strip().splitlines()[0] if text.strip() else "(empty body)"
    return first[:300]


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def _remove(path: Path) -> None:
    # A spool the runner may no longer write (read-only): the run was delivered,
    # and a second POST of it changes nothing on the service.
    try:
        path.unlink()
    except FileNotFoundError:
        pass
    except OSError as exc:
        logger.warning("delivered %s but could not remove it (%s)", path, exc)


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
            return Delivery("not_posted")
        if self.ended is not None:
            return self._closed_on_service()
        no_time = Delivery("unreachable", detail="no time left before the job's time limit")
        timeout = _time_left(client, deliver_by)
        if timeout is None:
            return client.keep(payload, no_time)
        if self.opened and not self.stopped:
            body = {key: payload[key] for key in _FINISH_KEYS if key in payload}
            finished = client.send(f"/api/runs/{self.run_uuid}/finish/", body, timeout_s=timeout)
            if finished.outcome != "rejected":
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
        if delivery.outcome == "posted" and stored and stored != payload.get("status"):
            # The service had ended the run already (its job was aborted): it keeps its own account.
            detail = f"the service had already ended this run as {stored}; it kept the samples it had"
            return Delivery("posted", delivery.status_code, detail, delivery.response)
        return delivery

    def _open(self, client: ServiceClient) -> None:
        document = {**self._document, "samples": self._samples, "sweep_points": self._points}
        opened = client.send("/api/runs/", document, timeout_s=min(client.timeout_s, LIVE_TIMEOUT_S))
        if opened.outcome == "unreachable":
            logger.warning("run %s: could not open it on the service (%s); will retry", self.run_uuid, opened.detail)
            return
        if opened.outcome == "rejected":
            self.stopped = f"the service refused to open the run: {opened.detail}"
            logger.warning("run %s: %s", self.run_uuid, self.stopped)
            return
        stored = opened.response or {}
        status = stored.get("status")
        if status != "running":
            self.stopped = f"the service already holds this run as {status}"
            if status in _ENDED:
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
        if appended.outcome == "posted":
            self._last_sent = time.monotonic()
            self._pending_samples, self._pending_points = [], []
            return
        self.appends_failed += 1
        if appended.outcome == "rejected":
            # 409: the run was closed on the service (its job aborted); 404/400: it will not take these.
            self.stopped = f"the service refused the samples: {appended.detail}"
            if appended.status_code == 409:
                self.ended = self._ended(client, timeout)
        logger.warning("run %s: samples not appended (%s)", self.run_uuid, appended.detail)

    def _closed_on_service(self) -> Delivery:
        # The service would only answer with the run it already holds.
        return Delivery("closed_on_service", 409, f"{self.ended}; it keeps the samples it had, nothing more was sent")

    def _ended(self, client: ServiceClient, timeout_s: float | None) -> EndedByService:
        """Return why the service closed the run, as it tells (status and reason);
        'aborted' when it cannot be asked, or not within ``timeout_s`` (None: no
        time left), since the service closes a job's run when it aborts the job."""
        stored: dict[str, Any] = {}
        if timeout_s is not None:
            with contextlib.suppress(requests.RequestException, ValueError):
                stored = client.get_run(self.run_uuid, timeout_s=min(timeout_s, LIVE_TIMEOUT_S))
        status = str(stored.get("status") or "")
        if status not in _ENDED:
            return EndedByService("run", "aborted", self.stopped)
        return EndedByService("run", status, str(stored.get("failure_reason") or ""))


def _time_left(client: ServiceClient, deliver_by: float | None) -> float | None:
    """Return the timeout for the next request: the client's, cut to the time
    left before ``deliver_by``; None when less than a second is left."""
    if deliver_by is None:
        return client.timeout_s
    left = deliver_by - time.monotonic()
    return min(client.timeout_s, left) if left >= 1.0 else None

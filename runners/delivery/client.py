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

A run live on the service while it is measured (opened, extended, closed) is
``live.LiveRun``, which sends through this client.
"""

from __future__ import annotations

import contextlib
import html
import json
import logging
import re
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

import requests

from runners.delivery.stored import spool_key, stored_shortfall
from runners.env import spool_fallback_dirs
from runners.files import write_atomically

logger = logging.getLogger(__name__)

_RETRY_STATUSES = {408, 429}


class DeliveryOutcome(StrEnum):
    """How one request or run was delivered (``Delivery.outcome``, a job's ``delivered``)."""

    POSTED = "posted"
    SPOOLED = "spooled"  # kept on the rig to send again
    REJECTED = "rejected"  # the service refused it (kept in the spool's rejected/)
    UNREACHABLE = "unreachable"  # a request that is not spooled: open, append, finish
    CLOSED_ON_SERVICE = "closed_on_service"  # the service had closed the run: nothing was sent
    UNSAVED = "unsaved"  # neither the service nor any directory took the run
    NOT_POSTED = "not_posted"  # no service, or nothing measured to send


@dataclass(frozen=True)
class Delivery:
    """How one request or run was delivered (``outcome``). ``fallback`` says why
    the run is not in the spool directory itself (empty when it is)."""

    outcome: DeliveryOutcome
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
            return Delivery(DeliveryOutcome.UNREACHABLE, detail=f"service unreachable: {exc}")
        try:
            body_in = resp.json()
        except ValueError:
            body_in = None
        if resp.status_code in (200, 201):
            return Delivery(DeliveryOutcome.POSTED, status_code=resp.status_code, response=body_in)
        detail = f"HTTP {resp.status_code}: " + (json.dumps(body_in) if body_in is not None else answer_text(resp))
        if resp.status_code >= 500 or resp.status_code in _RETRY_STATUSES:
            return Delivery(DeliveryOutcome.UNREACHABLE, status_code=resp.status_code, detail=detail)
        return Delivery(DeliveryOutcome.REJECTED, status_code=resp.status_code, detail=detail)

    def post_run(self, payload: Mapping[str, Any], *, timeout_s: float | None = None) -> Delivery:
        """POST one run; spool it or move it to rejected when that fails, and
        spool it when the answer does not show it stored. Never raises for the service's faults."""
        return self.keep(payload, self.checked(payload, self.send("/api/runs/", payload, timeout_s=timeout_s)))

    @staticmethod
    def checked(payload: Mapping[str, Any], delivery: Delivery) -> Delivery:
        """Return ``delivery``, or 'unreachable' (worth sending again) when it
        was posted but the answer does not show ``payload`` stored."""
        if delivery.outcome != DeliveryOutcome.POSTED:
            return delivery
        shortfall = stored_shortfall(payload, delivery.response)
        if not shortfall:
            return delivery
        logger.warning(
            "run %s: answered %s but %s; kept to send again", payload.get("uuid"), delivery.status_code, shortfall
        )
        return Delivery(DeliveryOutcome.UNREACHABLE, delivery.status_code, shortfall, delivery.response)

    def fallbacks(self) -> list[Path]:
        """Return this rig's own directory in each of ``fallback_dirs()``."""
        return [place / self.spool_key for place in fallback_dirs()]

    def keep(self, payload: Mapping[str, Any], delivery: Delivery) -> Delivery:
        """Return ``delivery`` for the whole run ``payload``, having written the
        run to the spool (unreachable) or to rejected/ (rejected) first. Where
        that directory cannot take it, the run goes to a fallback directory
        (``fallback`` says why); where none can, the outcome is 'unsaved'."""
        if delivery.outcome not in (DeliveryOutcome.UNREACHABLE, DeliveryOutcome.REJECTED):
            return delivery
        outcome = (
            DeliveryOutcome.SPOOLED if delivery.outcome == DeliveryOutcome.UNREACHABLE else DeliveryOutcome.REJECTED
        )
        places = [self.spool_dir, *self.fallbacks()]
        if outcome == DeliveryOutcome.REJECTED:
            places = [place / "rejected" for place in places]
        record = delivery if outcome == DeliveryOutcome.REJECTED else None
        try:
            path, fallback = self._write_somewhere(places, payload, record)
        except SpoolWriteError as exc:
            detail = f"{delivery.detail}; the run could not be written anywhere: {exc}"
            logger.error("run %s: %s", payload.get("uuid"), detail)
            return Delivery(DeliveryOutcome.UNSAVED, delivery.status_code, detail, fallback=str(exc))
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
            if delivery.outcome == DeliveryOutcome.POSTED:
                _remove(path)
                result.posted.append(payload["uuid"])
            elif sent.outcome == DeliveryOutcome.POSTED or delivery.status_code == 403:
                # Not all stored yet, or another rig's run (one spooled before
                # spools were kept per rig): left where it is, for its rig.
                logger.warning("spooled run %s left in %s: %s", payload["uuid"], path.parent, delivery.detail)
                result.remaining.append(payload["uuid"])
            elif delivery.outcome == DeliveryOutcome.REJECTED:
                if self.keep(payload, delivery).outcome == DeliveryOutcome.REJECTED:
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

"""Delivery to the service that loses nothing.

A run is POSTed with the rig's token and its client-generated uuid (the
service's idempotency key). On a connection error, a timeout, 5xx or 429 the
run JSON is written to the spool directory and re-posted later — before the
next run and by ``python -m runners flush``; a repeated POST of the same uuid
creates nothing twice. A 4xx (other than 429) will not get better by retrying:
the run moves to ``spool/rejected/`` with the service's answer, kept for a human.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests

_RETRY_STATUSES = {408, 429}


@dataclass(frozen=True)
class Delivery:
    """How one run was delivered: 'posted', 'spooled' or 'rejected'."""

    outcome: str
    status_code: int | None = None
    detail: str = ""
    response: Mapping[str, Any] | None = None
    path: str = ""


@dataclass
class FlushResult:
    posted: list[str] = field(default_factory=list)
    rejected: list[str] = field(default_factory=list)
    remaining: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, list[str]]:
        return {"posted": self.posted, "rejected": self.rejected, "remaining": self.remaining}


class ServiceClient:
    def __init__(self, url: str, token: str, *, spool_dir: str | Path, timeout_s: float = 30.0) -> None:
        self.url = url.rstrip("/")
        self.token = token
        self.spool_dir = Path(spool_dir).expanduser()
        self.timeout_s = timeout_s
        self.session = requests.Session()
        self.session.headers.update({"Authorization": f"Token {token}", "Accept": "application/json"})

    @property
    def rejected_dir(self) -> Path:
        return self.spool_dir / "rejected"

    def close(self) -> None:
        self.session.close()

    def _post(self, payload: Mapping[str, Any]) -> Delivery:
        try:
            resp = self.session.post(f"{self.url}/api/runs/", json=payload, timeout=self.timeout_s)
        except requests.RequestException as exc:
            return Delivery("spooled", detail=f"service unreachable: {exc}")
        try:
            body = resp.json()
        except ValueError:
            body = None
        if resp.status_code in (200, 201):
            return Delivery("posted", status_code=resp.status_code, response=body)
        detail = json.dumps(body) if body is not None else resp.text[:2000]
        if resp.status_code >= 500 or resp.status_code in _RETRY_STATUSES:
            return Delivery("spooled", status_code=resp.status_code, detail=f"HTTP {resp.status_code}: {detail}")
        return Delivery("rejected", status_code=resp.status_code, detail=f"HTTP {resp.status_code}: {detail}")

    def post_run(self, payload: Mapping[str, Any]) -> Delivery:
        """POST one run; spool it or move it to rejected when that fails. Never raises for the service's faults."""
        delivery = self._post(payload)
        if delivery.outcome == "spooled":
            path = self._write(self.spool_dir, payload, None)
            return Delivery("spooled", delivery.status_code, delivery.detail, path=str(path))
        if delivery.outcome == "rejected":
            path = self._write(self.rejected_dir, payload, delivery)
            return Delivery("rejected", delivery.status_code, delivery.detail, path=str(path))
        return delivery

    def flush(self) -> FlushResult:
        """Re-post every spooled run, oldest first; stop at the first that still cannot be delivered."""
        result = FlushResult()
        pending = (
            sorted(self.spool_dir.glob("*.json"), key=lambda p: p.stat().st_mtime) if self.spool_dir.is_dir() else []
        )
        for index, path in enumerate(pending):
            payload = json.loads(path.read_text())
            delivery = self._post(payload)
            if delivery.outcome == "posted":
                path.unlink()
                result.posted.append(payload["uuid"])
            elif delivery.outcome == "rejected":
                self._write(self.rejected_dir, payload, delivery)
                path.unlink()
                result.rejected.append(payload["uuid"])
            else:
                # The service is still down: later runs would fail the same way.
                result.remaining = [json.loads(p.read_text())["uuid"] for p in pending[index:]]
                break
        return result

    def spooled(self) -> list[str]:
        """Return the uuids waiting in the spool."""
        if not self.spool_dir.is_dir():
            return []
        return sorted(p.stem for p in self.spool_dir.glob("*.json"))

    def get_run(self, run_uuid: str) -> dict[str, Any]:
        """Return the stored run's detail; raise requests.HTTPError when it is not there."""
        resp = self.session.get(f"{self.url}/api/runs/{run_uuid}/", timeout=self.timeout_s)
        resp.raise_for_status()
        return dict(resp.json())

    @staticmethod
    def _write(directory: Path, payload: Mapping[str, Any], delivery: Delivery | None) -> Path:
        directory.mkdir(parents=True, exist_ok=True)
        target = directory / f"{payload['uuid']}.json"
        data: Any = payload
        if delivery is not None:
            data = {"payload": payload, "status_code": delivery.status_code, "error": delivery.detail}
        # Write then rename: a crash mid-write must not leave a truncated run.
        tmp = directory / f".{payload['uuid']}.{os.getpid()}.tmp"
        tmp.write_text(json.dumps(data, indent=1, sort_keys=True))
        tmp.replace(target)
        return target

"""Asking the service who a token belongs to (``GET /api/whoami/``), and the one-line
connection string the owner's rig page shows for ``rigboard-runner init --site-line``."""

from __future__ import annotations

import datetime as dt
import email.utils
import shlex
import time
from dataclasses import dataclass
from typing import Any

import requests

from runners.delivery.client import answer_text


@dataclass
class WhoAmI:
    """The service's answer: ``outcome`` is 'ok' (``rig`` and ``token`` set), 'bad_token'
    (401/403), 'down' (no answer, 5xx) or 'other' (any other answer); ``detail`` says what
    came back. ``clock_skew_s`` is the rig's clock minus the service's (from its Date
    header, half the round trip allowed for), None without an answer."""

    outcome: str
    detail: str
    rig: dict[str, Any] | None = None
    token: dict[str, Any] | None = None
    clock_skew_s: float | None = None
    elapsed_ms: float | None = None


def rig_clock() -> float:
    """Return this rig's clock (Unix seconds), which the doctor compares with the service's."""
    return time.time()


def whoami(url: str, token: str, *, timeout_s: float = 15.0) -> WhoAmI:
    """Return whose ``token`` is on the service at ``url``; never raises for the service's faults."""
    started = rig_clock()
    try:
        resp = requests.get(
            f"{url.rstrip('/')}/api/whoami/",
            headers={"Authorization": f"Token {token}", "Accept": "application/json"},
            timeout=timeout_s,
        )
    except requests.RequestException as exc:
        return WhoAmI("down", f"no answer from {url}: {exc.__class__.__name__}: {exc}")
    ended = rig_clock()
    skew = _skew(resp.headers.get("Date"), (started + ended) / 2)
    elapsed = (ended - started) * 1000
    if resp.status_code >= 500:
        return WhoAmI("down", f"{url} answers HTTP {resp.status_code}: {answer_text(resp)}", clock_skew_s=skew)
    if resp.status_code in (401, 403):
        return WhoAmI("bad_token", answer_text(resp), clock_skew_s=skew, elapsed_ms=elapsed)
    try:
        body = resp.json()
        rig, token_info = dict(body["rig"]), dict(body["token"])
    except (ValueError, KeyError, TypeError):
        return WhoAmI("other", f"HTTP {resp.status_code}: {answer_text(resp)}", clock_skew_s=skew, elapsed_ms=elapsed)
    return WhoAmI("ok", f"rig {rig.get('name')!r}", rig=rig, token=token_info, clock_skew_s=skew, elapsed_ms=elapsed)


def update_hardware(url: str, token: str, hardware: dict[str, Any], *, timeout_s: float = 15.0) -> WhoAmI:
    """Replace the service's record of the token's rig with ``hardware`` (``PUT
    /api/whoami/hardware/``: gpus, cpu, cpu_cores, ram_gb, os, driver and CUDA versions);
    return the answer as ``whoami`` reads it. Never raises for the service's faults."""
    try:
        resp = requests.put(
            f"{url.rstrip('/')}/api/whoami/hardware/",
            json=hardware,
            headers={"Authorization": f"Token {token}", "Accept": "application/json"},
            timeout=timeout_s,
        )
    except requests.RequestException as exc:
        return WhoAmI("down", f"no answer from {url}: {exc.__class__.__name__}: {exc}")
    if resp.status_code != 200:
        return WhoAmI("other", f"HTTP {resp.status_code}: {answer_text(resp)}")
    return WhoAmI("ok", "updated", rig=dict(resp.json()["rig"]))


def _skew(date_header: str | None, local_mid: float) -> float | None:
    if not date_header:
        return None
    try:
        service = email.utils.parsedate_to_datetime(date_header)
    except (TypeError, ValueError):
        return None
    if service.tzinfo is None:
        service = service.replace(tzinfo=dt.UTC)
    # The Date header has whole seconds: the service's clock is somewhere in [t, t + 1).
    return local_mid - (service.timestamp() + 0.5)


def site_line(url: str, token: str) -> str:
    """Return the line the owner's rig page shows: ``url=… token=…`` (read back by ``parse_site_line``)."""
    return f"url={shlex.quote(url)} token={shlex.quote(token)}"


def rig_commands(*, url: str, token: str, rig: str, source: str) -> list[str]:
    """Return the four commands a rig owner runs (install, init, doctor, run), filled in;
    the owner's rig page shows them with a fresh token, and the README names them."""
    q = shlex.quote
    return [
        f"pipx install {q(source)}",
        f"rigboard-runner init --url {q(url)} --token {q(token)} --rig {q(rig)}",
        "rigboard-runner doctor",
        "rigboard-runner run",
    ]


def parse_site_line(line: str) -> dict[str, str]:
    """Return {'url', 'token'} (and 'rig' when given) from a line ``url=… token=… [rig=…]``;
    ValueError naming what is missing or unknown."""
    values: dict[str, str] = {}
    for word in shlex.split(line.strip()):
        key, sep, value = word.partition("=")
        if not sep or key not in ("url", "token", "rig"):
            raise ValueError(f"site line: expected url=… token=…, got {word!r}")
        values[key] = value
    missing = [k for k in ("url", "token") if not values.get(k)]
    if missing:
        raise ValueError(f"site line: {' and '.join(missing)} missing (copy the whole line from your rig page)")
    return values

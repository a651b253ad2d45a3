"""Two small rules of delivery: whose spool a run lives in, and whether the
service's answer shows a run stored.

Several rigs may run on one host (a GPU instance and a CPU instance side by
side), each with its own config and token: each keeps its spool, and its
fallback directories, in a directory of its own under the spool root, so one
rig's flush never posts, rejects or quarantines another's run.

A 2xx answer is not enough to drop the spool copy of a run: a run the service
still holds open, or holds without some of the samples sent, is kept and sent
again (the service completes the run from it, adding only what it lacks)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from typing import Any

from runners.delivery.schema import END_STATUSES

# ``extra`` key of a run the service closed because staff aborted its job: the service's
# word stands, so the runner's own close adds nothing to it, even one that says 'aborted'.
CLOSED_BY_ABORT = "closed_by_job_abort_at"
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def spool_key(*, rig: str, token: str) -> str:
    """Return the name of a rig's own directory under a spool root: the rig's
    name (from its config), made safe for a file name (with a hash of the name
    when that changed it, so two names never share one); without a name, one
    derived from the token ("token-" and 16 hex digits of its sha256)."""
    if rig.strip():
        safe = _UNSAFE.sub("_", rig.strip()).strip("._")[:80]
        if safe == rig:
            return safe
        return f"{safe or 'rig'}-{hashlib.sha256(rig.encode()).hexdigest()[:8]}"
    return f"token-{hashlib.sha256(token.encode()).hexdigest()[:16]}"


def stored_shortfall(payload: Mapping[str, Any], answer: Mapping[str, Any] | None) -> str:
    """Return why the service's 2xx ``answer`` (the run's detail) does not show
    the run ``payload`` stored, '' when it does: a run the payload ends that the
    service holds as running, or one it holds with the payload's status but
    without some of its samples or sweep points. A run the service ended with
    another status, or closed when staff aborted its job (``CLOSED_BY_ABORT``),
    is the service's own account: ''."""
    if not isinstance(answer, Mapping):
        return "the service's answer is not the run's detail"
    sent_status, held_status = payload.get("status"), answer.get("status")
    if sent_status in END_STATUSES and held_status == "running":
        return f"the service still holds the run as running, not {sent_status}"
    if held_status != sent_status and held_status in END_STATUSES:
        return ""
    if (
        held_status in END_STATUSES
        and isinstance(answer.get("extra"), Mapping)
        and answer["extra"].get(CLOSED_BY_ABORT)
    ):
        return ""  # its job was aborted: the service keeps the samples it had, and no more
    missing = _indexes(payload.get("samples"), "index") - _indexes(answer.get("samples"), "index")
    if missing:
        return f"the service holds the run without samples {sorted(missing)}"
    missing = _indexes(payload.get("sweep_points"), "ctx_tokens") - _indexes(answer.get("sweep_points"), "ctx_tokens")
    if missing:
        return f"the service holds the run without the sweep points at {sorted(missing)} tokens"
    return ""


def _indexes(items: Any, key: str) -> set[Any]:
    if not isinstance(items, list):
        return set()
    return {item.get(key) for item in items if isinstance(item, Mapping) and item.get(key) is not None}

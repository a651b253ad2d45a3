"""The job spec: what staff ask a rig to run, checked before it is queued.

A spec is the rig configuration the runner reads (runners/config.py,
``RigConfig.from_mapping``) without the ``service`` table and ``run_uuid``:
the rig fills in its own service URL and token (a token never travels through
the broker), and the job supplies the run uuid. Validating with the runner's
own parser means a bad spec is refused here, naming the field, rather than
failing later on the rig."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from leaderboard.core.errors import ApplicationError
from runners.config import ConfigError, RigConfig

# Set by the service or by the rig, never by whoever queues the job.
_RESERVED = ("service", "run_uuid")


def spec_validate(*, kind: str, spec: Mapping[str, Any]) -> dict[str, Any]:
    """Return a copy of ``spec`` ready to store for a job of ``kind``.

    A sweep job has ``sweep.enabled`` set and needs at least one depth; a suite
    job has it cleared. Raise ApplicationError naming the field (``spec.<path>``)
    for anything the runner would refuse."""
    if not isinstance(spec, Mapping):
        raise ApplicationError("must be a JSON object", field="spec")
    for key in _RESERVED:
        if key in spec:
            raise ApplicationError("is set by the service and the rig, not in a job spec", field=f"spec.{key}")
    clean = copy.deepcopy(dict(spec))
    sweep = clean.get("sweep") or {}
    if not isinstance(sweep, Mapping):
        raise ApplicationError("expected an object", field="spec.sweep")
    sweep = dict(sweep)
    sweep["enabled"] = kind == "sweep"
    if kind == "sweep" and "depths" in sweep and not sweep["depths"]:
        raise ApplicationError("a sweep needs at least one depth", field="spec.sweep.depths")
    clean["sweep"] = sweep
    try:
        RigConfig.from_mapping(clean)
    except ConfigError as exc:
        raise ApplicationError(exc.reason, field=f"spec.{exc.field}") from exc
    return clean

"""Storing run documents from files: the JSON a runner writes with ``--output``
(the body of ``POST /api/runs/``), checked by the run payload's one definition
(runners.delivery.schema), as that endpoint is,
and stored by the same service. ``manage.py import_runs`` and the importers of
recorded campaigns and nightly timelines all come this way."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from leaderboard.core.errors import ApplicationError
from leaderboard.results.api.payloads import payload_checked
from leaderboard.results.models import Rig
from leaderboard.results.services.runs import RunCreateResult, run_create_measured
from runners.delivery import schema


def run_document_store(*, rig: Rig, document: Mapping[str, Any]) -> RunCreateResult:
    """Store one run document as a measured run of ``rig``; the same uuid again
    stores nothing and returns the stored run (``created`` False). Raise
    ApplicationError naming each bad field, as the API's 400 does."""
    data, problems = payload_checked(schema.RunCreateInput, {**document, "rig": rig.name})
    if data is None:
        field = next(iter(problems), "body")
        raise ApplicationError("; ".join(f"{k}: {' '.join(v)}" for k, v in problems.items()), field=field)
    return run_create_measured(rig=rig, data=data)

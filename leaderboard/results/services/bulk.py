"""Many runs of one rig at once (``POST /api/runs/bulk/``, ``manage.py import_runs``):
each run checked, stored and answered on its own, as ``POST /api/runs/`` would.

A run is refused (4xx naming its fields, prefixed ``runs.<index>.``) without
blocking the others, and is stored whole or not at all. New runs without
concurrency levels (nearly every run of an import) are stored together
(``speedups/bulk_sql.py``); every other run (a uuid already stored, one repeated
in the batch, one with concurrency levels) goes the single-run way,
``run_create_measured``, which answers "already stored", completes an open run
or refuses another rig's uuid with 409.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db import IntegrityError, transaction

from leaderboard.core.errors import ApplicationError
from leaderboard.results.api.payloads import payload_checked
from leaderboard.results.models import Rig, Run
from leaderboard.results.services.runs import run_create_measured
from leaderboard.results.speedups.bulk_sql import runs_insert_new
from runners.delivery import schema

CREATED, STORED, REFUSED = "created", "already stored", "refused"


@dataclass(frozen=True)
class BulkRunOutcome:
    """What became of the run at ``index`` of a batch: ``status_code`` as ``POST /api/runs/``
    would answer it (201 created, 200 already stored, 4xx refused with ``errors``)."""

    index: int
    uuid: str | None
    status_code: int
    result: str
    errors: dict[str, list[str]] = field(default_factory=dict)
    run: Run | None = None


def _refused(index: int, document: Any, status_code: int, errors: Mapping[str, list[str]]) -> BulkRunOutcome:
    run_uuid = document.get("uuid") if isinstance(document, Mapping) else None
    return BulkRunOutcome(
        index=index,
        uuid=str(run_uuid) if isinstance(run_uuid, str | uuid.UUID) else None,
        status_code=status_code,
        result=REFUSED,
        errors={f"runs.{index}.{name}": list(why) for name, why in errors.items()},
    )


def _checked(rig: Rig, index: int, document: Any) -> tuple[dict[str, Any] | None, BulkRunOutcome | None]:
    """Return (validated payload, None), or (None, the refusal). A run that leaves out
    ``rig`` is the token's rig's; one that names another rig is refused with 403."""
    if isinstance(document, dict):
        claimed = document.get("rig")
        if claimed is None:
            document = {**document, "rig": rig.name}
        elif isinstance(claimed, str) and claimed != rig.name:
            why = f"This token belongs to rig {rig.name!r}; it cannot submit runs for rig {claimed!r}."
            return None, _refused(index, document, 403, {"rig": [why]})
    data, problems = payload_checked(schema.RunCreateInput, document)
    if data is None:
        return None, _refused(index, document, 400, problems)
    return data, None


def _one(rig: Rig, index: int, data: Mapping[str, Any]) -> BulkRunOutcome:
    """Store one run the single-run way and say what became of it."""
    try:
        result = run_create_measured(rig=rig, data=data)
    except ApplicationError as exc:
        return _refused(index, data, exc.status_code, {exc.field or "body": [exc.message]})
    return BulkRunOutcome(
        index=index,
        uuid=str(result.run.uuid),
        status_code=201 if result.created else 200,
        result=CREATED if result.created else STORED,
        run=result.run,
    )


def runs_store_bulk(
    *, rig: Rig, documents: Sequence[Any], refused: Mapping[int, Any] | None = None
) -> list[BulkRunOutcome]:
    """Check and store each run document of ``documents`` as a measured run of ``rig``;
    return one outcome per document, in order. ``refused`` maps an index to the
    errors already found there (the parser's), which are answered as 400s."""
    outcomes: dict[int, BulkRunOutcome] = {}
    valid: dict[int, dict[str, Any]] = {}
    for index, document in enumerate(documents):
        if refused and index in refused:
            outcomes[index] = _refused(index, document, 400, refused[index])
            continue
        data, refusal = _checked(rig, index, document)
        if refusal is not None:
            outcomes[index] = refusal
        else:
            valid[index] = data  # type: ignore[assignment]
    stored = set(Run.objects.filter(uuid__in=[d["uuid"] for d in valid.values()]).values_list("uuid", flat=True))
    plain: dict[int, dict[str, Any]] = {}
    seen = set(stored)
    for index, data in valid.items():
        if data["uuid"] not in seen and not data.get("concurrency_levels"):
            plain[index] = data
        seen.add(data["uuid"])
    try:
        with transaction.atomic():
            runs = runs_insert_new(rig=rig, datas=list(plain.values()))
    except IntegrityError:
        # Another request stored one of these uuids meanwhile: each run its own way.
        plain, runs = {}, []
    for index, run in zip(plain, runs, strict=True):
        outcomes[index] = BulkRunOutcome(index=index, uuid=str(run.uuid), status_code=201, result=CREATED, run=run)
    for index, data in valid.items():
        if index not in outcomes:
            outcomes[index] = _one(rig, index, data)
    return [outcomes[index] for index in range(len(documents))]

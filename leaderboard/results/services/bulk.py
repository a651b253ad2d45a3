"""Many validated runs of one rig stored at once (``POST /api/runs/bulk/``,
``manage.py import_runs``), each answered on its own as ``POST /api/runs/`` would.

New runs without concurrency levels (nearly every run of an import) are built
together, their catalog rows resolved for the whole batch, and stored in three
statements (``speedups/bulk_sql.py``); every other run (a uuid already stored,
one repeated in the batch, one with concurrency levels) goes the single-run way,
``run_create_measured``, which answers "already stored", completes an open run or
refuses another rig's uuid with 409. A run is stored whole or not at all.
The reference is ``runs_store_one_by_one``: tests/results/test_bulk_speedup.py.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db import IntegrityError, models, transaction
from django.db.models import Q

from leaderboard.core.errors import ApplicationError
from leaderboard.results.hardware.stored import store_ranked_shares
from leaderboard.results.models import (
    ModelFile,
    Provenance,
    Rig,
    RigGpu,
    Run,
    Sample,
    SweepPoint,
    Workload,
)
from leaderboard.results.services.catalog import catalog_get_or_create, catalog_keys
from leaderboard.results.services.fields import sample_objects, sweep_objects
from leaderboard.results.services.runs import (
    MEASURED_RUN_FIELDS,
    run_comparison_key,
    run_create_measured,
    run_object,
)
from leaderboard.results.services.summary import run_summary_apply
from leaderboard.results.speedups.bulk_sql import runs_rows_store

CREATED, STORED, REFUSED = "created", "already stored", "refused"


@dataclass(frozen=True)
class BulkRunOutcome:
    """What became of the run at ``index`` of a batch: ``status_code`` as ``POST /api/runs/``
    would answer it (201 created, 200 already stored, 4xx refused with ``errors``, whose
    field paths start with ``runs.<index>.``)."""

    index: int
    uuid: str | None
    status_code: int
    result: str
    errors: dict[str, list[str]] = field(default_factory=dict)
    run: Run | None = None


def bulk_refusal(index: int, document: Any, status_code: int, errors: Mapping[str, Sequence[str]]) -> BulkRunOutcome:
    """Return the refusal of the run ``document`` at ``index``, its errors' paths prefixed."""
    run_uuid = document.get("uuid") if isinstance(document, Mapping) else None
    if isinstance(run_uuid, str):
        try:
            run_uuid = uuid.UUID(run_uuid)
        except ValueError:
            run_uuid = None  # not a uuid: the answer names none
    return BulkRunOutcome(
        index=index,
        uuid=str(run_uuid) if isinstance(run_uuid, uuid.UUID) else None,
        status_code=status_code,
        result=REFUSED,
        errors={f"runs.{index}.{name}": list(why) for name, why in errors.items()},
    )


def _stored(index: int, run: Run, created: bool) -> BulkRunOutcome:
    status_code, result = (201, CREATED) if created else (200, STORED)
    return BulkRunOutcome(index=index, uuid=str(run.uuid), status_code=status_code, result=result, run=run)


def _one(rig: Rig, index: int, data: Mapping[str, Any]) -> BulkRunOutcome:
    """Store one run the single-run way and say what became of it."""
    try:
        result = run_create_measured(rig=rig, data=data)
    except ApplicationError as exc:
        return bulk_refusal(index, data, exc.status_code, {exc.field or "body": [exc.message]})
    return _stored(index, result.run, result.created)


def runs_store_one_by_one(*, rig: Rig, datas: Mapping[int, Mapping[str, Any]]) -> dict[int, BulkRunOutcome]:
    """The plain reference of ``runs_store_bulk``: each payload through ``run_create_measured``, in order."""
    return {index: _one(rig, index, data) for index, data in datas.items()}


def runs_store_bulk(*, rig: Rig, datas: Mapping[int, Mapping[str, Any]]) -> dict[int, BulkRunOutcome]:
    """Store the validated payloads ``datas`` (``schema.validated(RunCreateInput, …)``, by their
    index in the batch) as measured runs of ``rig``; return an outcome per index."""
    stored = set(Run.objects.filter(uuid__in=[d["uuid"] for d in datas.values()]).values_list("uuid", flat=True))
    plain: dict[int, Mapping[str, Any]] = {}
    seen = set(stored)
    for index, data in datas.items():
        if data["uuid"] not in seen and not data.get("concurrency_levels"):
            plain[index] = data
        seen.add(data["uuid"])
    try:
        with transaction.atomic():
            runs = runs_insert_new(rig=rig, datas=list(plain.values()))
    except IntegrityError:
        # Another request stored one of these uuids meanwhile: each run its own way.
        plain, runs = {}, []
    outcomes = {index: _stored(index, run, True) for index, run in zip(plain, runs, strict=True)}
    for index, data in datas.items():
        if index not in outcomes:
            outcomes[index] = _one(rig, index, data)
    return outcomes


def _identity(lookup: Mapping[str, Any]) -> str:
    return json.dumps(lookup, sort_keys=True, default=str)


def _catalog_resolve(
    model: type[models.Model], keys: Sequence[tuple[dict[str, Any], dict[str, Any]]]
) -> dict[str, models.Model]:
    """Return the ``model`` rows for every (lookup, defaults) of ``keys`` by lookup identity:
    the existing ones in one query (a key's oldest row, as ``ingest_lookup`` takes it),
    the missing ones created with the defaults of the first run naming them, as storing
    the runs one by one in order would."""
    wanted: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {}
    for lookup, defaults in keys:
        wanted.setdefault(_identity(lookup), (lookup, defaults))
    condition = Q()
    for lookup, _ in wanted.values():
        condition |= Q(**lookup)
    names = list(next(iter(wanted.values()))[0])
    found: dict[str, models.Model] = {}
    for row in model._default_manager.filter(condition).order_by("pk"):
        found.setdefault(_identity({name: getattr(row, name) for name in names}), row)
    for identity, (lookup, defaults) in wanted.items():
        if identity not in found:
            found[identity] = catalog_get_or_create(model, lookup, defaults)
    return found


def _run_object(
    rig: Rig,
    rig_gpus: Sequence[RigGpu],
    catalog: Mapping[type[models.Model], Any],
    data: Mapping[str, Any],
    keys: dict[tuple[int, int], str],
) -> Run:
    # The Run's fields as run_create_measured and run_create set them.
    run = {name: data.get(name) for name in MEASURED_RUN_FIELDS}
    run["fingerprint"] = run["fingerprint"] or {}
    run["extra"] = run["extra"] or {}
    run["provenance"] = Provenance.MEASURED
    # One rig, so the key depends only on the model file and the workload: computed once per pair.
    model_obj, workload_obj = catalog[ModelFile], catalog[Workload]
    pair = (model_obj.pk, workload_obj.pk)
    if pair not in keys:
        keys[pair] = run_comparison_key(rig=rig, model_file=model_obj, workload=workload_obj, rig_gpus=rig_gpus)
    return run_object(rig=rig, catalog=catalog, run=run, comparison_key=keys[pair])


def runs_insert_new(*, rig: Rig, datas: Sequence[Mapping[str, Any]]) -> list[Run]:
    """Store the validated payloads ``datas`` as new measured runs of ``rig`` with their
    samples and sweep points, in the caller's transaction; return the runs, in order.

    Every uuid must be new and distinct, and no payload may carry concurrency levels
    (``runs_store_bulk`` checks); a uuid stored meanwhile raises IntegrityError."""
    if not datas:
        return []
    rig_gpus = tuple(rig.gpus.order_by("position", "id"))
    run_keys = [catalog_keys(data) for data in datas]
    rows = {model: _catalog_resolve(model, [k[model] for k in run_keys]) for model in run_keys[0]}
    runs: list[Run] = []
    samples: list[Sample] = []
    points: list[SweepPoint] = []
    comparison_keys: dict[tuple[int, int], str] = {}
    for position, data in enumerate(datas):
        catalog = {model: rows[model][_identity(lookup)] for model, (lookup, _) in run_keys[position].items()}
        run = _run_object(rig, rig_gpus, catalog, data, comparison_keys)
        run_samples = sample_objects(run, data["samples"])
        run_points = sweep_objects(run, data["sweep_points"])
        run_summary_apply(run=run, samples=run_samples, sweep_points=run_points)
        runs.append(run)
        samples += run_samples
        points += run_points
    runs_rows_store(runs=runs, samples=samples, points=points)
    store_ranked_shares(runs)
    return runs

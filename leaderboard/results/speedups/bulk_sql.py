"""Many new runs stored at once (``POST /api/runs/bulk/``): the catalog rows
resolved for the whole batch, the runs inserted in one statement, their samples
in one and their sweep points in one (PostgreSQL).

The reference is the single-run service, ``run_create_measured`` called once
per run (``runs_insert_one_by_one``): both must store the same rows and compute
the same summaries (tests/results/test_bulk_speedup.py). One run at a time costs
four round trips and a savepoint per run; a batch of 500 costs a handful.

Only *plain new* runs come here: validated, no run stored with their uuid, no
concurrency levels. The caller (results/services/bulk.py) sends every other run
the single-run way. Off PostgreSQL, or with save signals connected, the rows are
saved by the ORM (``bulk_create``), which stores the same rows more slowly.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from typing import Any

from django.db import connection, models
from django.db.models import Q
from django.utils import timezone

from leaderboard.results.models import (
    Configuration,
    ModelFile,
    Provenance,
    Rig,
    Run,
    RunStatus,
    Sample,
    Stack,
    SweepPoint,
    Workload,
)
from leaderboard.results.services.catalog import (
    catalog_get_or_create,
    configuration_key,
    model_file_key,
    stack_key,
    workload_key,
)
from leaderboard.results.services.fields import blank_fields, sample_objects, sweep_objects
from leaderboard.results.services.runs import (
    MEASURED_RUN_FIELDS,
    RunCreateResult,
    run_comparison_key,
    run_create_measured,
)
from leaderboard.results.services.summary import run_summary_apply
from leaderboard.results.speedups.cursor import prepared_cursor
from leaderboard.results.speedups.ingest_sql import _auto_dates, _document, _fields, _row, applies

_KEYS = {Stack: stack_key, ModelFile: model_file_key, Configuration: configuration_key, Workload: workload_key}
_PAYLOAD_PART = {Stack: "stack", ModelFile: "model_file", Configuration: "configuration", Workload: "workload"}
_ENDED = (RunStatus.FINISHED, RunStatus.FAILED, RunStatus.ABORTED)


def runs_insert_one_by_one(*, rig: Rig, datas: Sequence[Mapping[str, Any]]) -> list[RunCreateResult]:
    """The plain reference: each validated payload through ``run_create_measured``, in order."""
    return [run_create_measured(rig=rig, data=data) for data in datas]


def _identity(lookup: Mapping[str, Any]) -> str:
    return json.dumps(lookup, sort_keys=True, default=str)


def _catalog_resolve(
    model: type[models.Model], keys: Sequence[tuple[dict[str, Any], dict[str, Any]]]
) -> dict[str, models.Model]:
    """Return the ``model`` rows for every (lookup, defaults) in ``keys`` by lookup identity:
    the existing ones in one query (the oldest row of a key, as ``ingest_lookup`` takes it),
    the missing ones created with the defaults of the first run that names them, as
    storing the runs one by one in order would."""
    wanted: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {}
    for lookup, defaults in keys:
        wanted.setdefault(_identity(lookup), (lookup, defaults))
    condition = Q()
    for lookup, _ in wanted.values():
        condition |= Q(**lookup)
    found: dict[str, models.Model] = {}
    for row in model._default_manager.filter(condition).order_by("pk"):
        any_lookup = next(iter(wanted.values()))[0]
        found.setdefault(_identity({name: getattr(row, name) for name in any_lookup}), row)
    for identity, (lookup, defaults) in wanted.items():
        if identity not in found:
            found[identity] = catalog_get_or_create(model, lookup, defaults)
    return found


def _run_object(
    rig: Rig, rig_gpus: Sequence[Any], catalog: Mapping[type[models.Model], Any], data: Mapping[str, Any]
) -> Run:
    # The Run fields as run_create_measured and run_create set them.
    run = {name: data.get(name) for name in MEASURED_RUN_FIELDS}
    run["fingerprint"] = run["fingerprint"] or {}
    run["extra"] = run["extra"] or {}
    run["provenance"] = Provenance.MEASURED
    fields = blank_fields(
        run, Run, exclude=["rig", "stack", "model_file", "configuration", "workload", "comparison_key"]
    )
    if fields.get("status") in _ENDED and not fields.get("finished_at"):
        fields["finished_at"] = timezone.now()
    model_obj, workload_obj = catalog[ModelFile], catalog[Workload]
    return Run(
        rig=rig,
        stack=catalog[Stack],
        model_file=model_obj,
        configuration=catalog[Configuration],
        workload=workload_obj,
        comparison_key=run_comparison_key(rig=rig, model_file=model_obj, workload=workload_obj, rig_gpus=rig_gpus),
        **fields,
    )


def runs_insert_new(*, rig: Rig, datas: Sequence[Mapping[str, Any]]) -> list[Run]:
    """Store the validated payloads ``datas`` as new measured runs of ``rig`` with their
    samples and sweep points, in the caller's transaction; return the runs, in order.

    Every uuid must be new and distinct and no payload may carry concurrency levels
    (the caller checks); a uuid stored meanwhile by another request raises
    IntegrityError, and the caller's transaction stores none of them."""
    if not datas:
        return []
    rig_gpus = tuple(rig.gpus.order_by("position", "id"))
    keys = {model: [key(data[_PAYLOAD_PART[model]]) for data in datas] for model, key in _KEYS.items()}
    rows = {model: _catalog_resolve(model, model_keys) for model, model_keys in keys.items()}
    runs: list[Run] = []
    samples: list[Sample] = []
    points: list[SweepPoint] = []
    for position, data in enumerate(datas):
        catalog = {model: rows[model][_identity(keys[model][position][0])] for model in _KEYS}
        run = _run_object(rig, rig_gpus, catalog, data)
        run_samples = sample_objects(run, data["samples"])
        run_points = sweep_objects(run, data["sweep_points"])
        run_summary_apply(run=run, samples=run_samples, sweep_points=run_points)
        runs.append(run)
        samples += run_samples
        points += run_points
    if applies():
        _rows_insert(runs, samples, points)
    else:
        Run.objects.bulk_create(runs)
        for child in (*samples, *points):
            child.run = child.run  # type: ignore[attr-defined]  # sets run_id, now that the run has its id
        Sample.objects.bulk_create(samples)
        SweepPoint.objects.bulk_create(points)
    return runs


@functools.cache
def _insert(model: type[models.Model], returning: str = "") -> str:
    quote = connection.ops.quote_name
    table = quote(model._meta.db_table)
    columns = ", ".join(quote(f.column) for f in _fields(model))
    selected = ", ".join(f"r.{quote(f.column)}" for f in _fields(model))
    # Only quoted identifiers are formatted in; the rows are one JSON parameter.
    return (
        f"INSERT INTO {table} ({columns}) SELECT {selected} "  # noqa: S608
        f"FROM jsonb_populate_recordset(NULL::{table}, %s::jsonb) AS r{returning}"
    )


def _rows_insert(runs: Sequence[Run], samples: Sequence[Sample], points: Sequence[SweepPoint]) -> None:
    for run in runs:
        for field in _auto_dates(Run):
            field.pre_save(run, add=True)  # sets created_at / updated_at on the object
    run_fields = _fields(Run)
    with prepared_cursor() as cursor:
        cursor.execute(
            _insert(Run, f" RETURNING {connection.ops.quote_name('id')}, {connection.ops.quote_name('uuid')}"),
            [_document([_row(run, run_fields) for run in runs])],
        )
        ids = {str(run_uuid): pk for pk, run_uuid in cursor.fetchall()}
        for run in runs:
            run.pk = ids[str(run.uuid)]
            run._state.adding, run._state.db = False, connection.alias
        for model, children in ((Sample, samples), (SweepPoint, points)):
            if not children:
                continue
            fields = _fields(model)
            for child in children:
                child.run = child.run  # type: ignore[attr-defined]  # sets run_id from the run's new id
            cursor.execute(_insert(model), [_document([_row(child, fields) for child in children])])

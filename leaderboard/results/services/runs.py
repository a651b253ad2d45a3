"""Run ingest: one call creates (or finds) the catalog rows and stores a run
with its samples and sweep points in one transaction.

Input dicts are already validated (by the API serializers or the published
data importer); field names are the model field names.
"""

from __future__ import annotations

import functools
import uuid as uuid_lib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, connection, models, transaction
from django.utils import timezone

from leaderboard.results.db import prepared_cursor
from leaderboard.results.models import (
    Configuration,
    ModelFile,
    Rig,
    RigGpu,
    Run,
    RunStatus,
    Sample,
    Stack,
    SweepPoint,
    Workload,
)
from leaderboard.results.services import ingest_sql
from leaderboard.results.services.concurrency import concurrency_levels_create
from leaderboard.results.services.keys import comparison_key, config_hash
from leaderboard.results.services.summary import run_summary_apply, run_summary_update


class ApplicationError(Exception):
    """A request the service understood but refuses; ``field`` names the culprit."""

    def __init__(self, message: str, *, field: str | None = None, status_code: int = 400) -> None:
        super().__init__(message)
        self.message = message
        self.field = field
        self.status_code = status_code


@dataclass(frozen=True)
class RunCreateResult:
    """``run`` is the stored run; when ``created``, its ``samples`` and
    ``sweep_points`` are prefetched (reading them costs no query) and
    ``rig_gpus`` holds the rig's GPUs as the comparison key saw them."""

    run: Run
    created: bool
    rig_gpus: tuple[RigGpu, ...] | None = None


@functools.cache
def _blank_plan(model: type[models.Model], exclude: tuple[str, ...]) -> tuple[tuple[str, Any, bool, Any], ...]:
    """(name, field, has_default, blank) for each concrete non-primary-key field of ``model``."""
    plan = []
    for field in model._meta.concrete_fields:
        if field.primary_key or field.name in exclude:
            continue
        blank = "" if field.empty_strings_allowed and not field.null else None
        plan.append((field.name, field, field.has_default(), blank))
    return tuple(plan)


def _blank(data: Mapping[str, Any], model: type, exclude: Sequence[str] = ()) -> dict[str, Any]:
    """Return ``data`` restricted to ``model``'s concrete fields, with '' for missing text fields
    and None for other missing ones, so natural-key lookups match."""
    out: dict[str, Any] = {}
    for name, field, has_default, blank in _blank_plan(model, tuple(exclude)):
        value = data.get(name)
        if value is not None:
            out[name] = value
        elif has_default:
            out[name] = field.get_default()
        else:
            out[name] = blank
    return out


def _get_or_create(model: type, lookup: dict[str, Any], defaults: dict[str, Any] | None = None) -> Any:
    # A concurrent ingest may create the same row between get and create; the
    # unique constraint catches that and the second get finds the winner.
    try:
        with transaction.atomic():
            obj, _ = model.objects.get_or_create(**lookup, defaults=defaults or {})  # type: ignore[attr-defined]
            return obj
    except IntegrityError:
        return model.objects.get(**lookup)  # type: ignore[attr-defined]


# Each catalog row is found by its natural key (the lookup) and created with
# the rest (the defaults) when missing.
_MODEL_FILE_KEY = ("name", "repo", "quantization", "sha256")


def _stack_key(data: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    return _blank(data, Stack, exclude=["notes"]), {"notes": data.get("notes") or ""}


def _model_file_key(data: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    fields = _blank(data, ModelFile)
    return {k: fields[k] for k in _MODEL_FILE_KEY}, {k: v for k, v in fields.items() if k not in _MODEL_FILE_KEY}


def _configuration_key(data: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    fields = _blank(data, Configuration, exclude=["config_hash"])
    return {"config_hash": config_hash(fields)}, fields


def _workload_key(data: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    return _blank(data, Workload, exclude=["description"]), {"description": data.get("description") or ""}


def stack_get_or_create(*, data: Mapping[str, Any]) -> Stack:
    return _get_or_create(Stack, *_stack_key(data))


def model_file_get_or_create(*, data: Mapping[str, Any]) -> ModelFile:
    return _get_or_create(ModelFile, *_model_file_key(data))


def configuration_get_or_create(*, data: Mapping[str, Any]) -> Configuration:
    return _get_or_create(Configuration, *_configuration_key(data))


def workload_get_or_create(*, data: Mapping[str, Any]) -> Workload:
    return _get_or_create(Workload, *_workload_key(data))


@dataclass(frozen=True)
class _Found:
    """What the ingest lookup found: catalog rows by natural key (None when missing),
    the rig's GPUs, and the rig of a run that already has the uuid (None if no run has)."""

    catalog: dict[type[models.Model], models.Model | None]
    rig_gpus: tuple[RigGpu, ...]
    existing_rig_id: int | None


def _row_subquery(model: type[models.Model], lookup: Mapping[str, Any], params: list[Any]) -> str:
    quote = connection.ops.quote_name
    conditions = []
    for name, value in lookup.items():
        column = quote(model._meta.get_field(name).column)  # type: ignore[union-attr,arg-type]
        if value is None:
            conditions.append(f"t.{column} IS NULL")
        else:
            conditions.append(f"t.{column} = %s")
            params.append(value)
    where = " AND ".join(conditions) or "TRUE"
    # Unique constraints let NULLs repeat, so "the" row is the oldest match.
    # Only quoted identifiers are formatted in; values are parameters.
    return f"(SELECT row_to_json(t) FROM {quote(model._meta.db_table)} t WHERE {where} ORDER BY t.id LIMIT 1)"  # noqa: S608


def _from_json(model: type[models.Model], row: Mapping[str, Any]) -> models.Model:
    fields = model._meta.concrete_fields
    return model.from_db(connection.alias, [f.attname for f in fields], [row[f.column] for f in fields])


def _ingest_lookup(*, rig: Rig, run_uuid: Any, lookups: Mapping[type[models.Model], Mapping[str, Any]]) -> _Found:
    """Find the four catalog rows, the rig's GPUs and an existing run with ``run_uuid``
    in one round trip (PostgreSQL; other databases get one query per item).

    The ORM would spend a SAVEPOINT, SELECT and RELEASE per catalog row; this
    costs one statement, and reads rows as they are now (a per-process cache
    could hand out rows deleted since, which deferred foreign keys would only
    reveal at COMMIT)."""
    if connection.vendor != "postgresql":
        return _Found(
            catalog={
                model: model._default_manager.filter(**lookup).order_by("pk").first()
                for model, lookup in lookups.items()
            },
            rig_gpus=tuple(rig.gpus.order_by("position", "id")),
            existing_rig_id=Run.objects.filter(uuid=run_uuid).values_list("rig_id", flat=True).first(),
        )
    params: list[Any] = []
    columns = [_row_subquery(model, lookup, params) for model, lookup in lookups.items()]
    quote = connection.ops.quote_name
    columns.append(
        f"(SELECT json_agg(row_to_json(g) ORDER BY g.{quote('position')}, g.id) "  # noqa: S608
        f"FROM {quote(RigGpu._meta.db_table)} g WHERE g.{quote('rig_id')} = %s)"
    )
    columns.append(f"(SELECT r.{quote('rig_id')} FROM {quote(Run._meta.db_table)} r WHERE r.{quote('uuid')} = %s)")  # noqa: S608
    params += [rig.pk, run_uuid]
    with prepared_cursor() as cursor:
        cursor.execute("SELECT " + ", ".join(columns), params)
        row = cursor.fetchone()
    catalog = {
        model: _from_json(model, found) if found is not None else None
        for model, found in zip(lookups, row, strict=False)
    }
    gpus = tuple(_from_json(RigGpu, g) for g in row[len(lookups)] or ())
    return _Found(catalog=catalog, rig_gpus=gpus, existing_rig_id=row[len(lookups) + 1])  # type: ignore[arg-type]


def attach_prefetched(instance: models.Model, name: str, objects: Sequence[Any]) -> None:
    """Make ``instance.<name>.all()`` return ``objects`` without a query, as prefetch_related would."""
    queryset = getattr(instance, name).all()
    queryset._result_cache = list(objects)
    queryset._prefetch_done = True
    instance._prefetched_objects_cache = {  # type: ignore[attr-defined]
        **getattr(instance, "_prefetched_objects_cache", {}),
        name: queryset,
    }


def _workload_identity(workload: Workload) -> str:
    return f"{workload.name}|{workload.version}|{workload.prompt_sha256}|{workload.max_tokens}"


def run_comparison_key(
    *, rig: Rig, model_file: ModelFile, workload: Workload, rig_gpus: Sequence[RigGpu] | None = None
) -> str:
    """Return the run's comparison key; ``rig_gpus``, when given, saves reading the rig's GPUs."""
    gpus = [{"model": g.model, "count": g.count} for g in (rig.gpus.all() if rig_gpus is None else rig_gpus)]
    return comparison_key(gpus=gpus, model_identity=model_file.identity, workload_identity=_workload_identity(workload))


def _sample_objects(run: Run, samples: Sequence[Mapping[str, Any]]) -> list[Sample]:
    objs = []
    for position, data in enumerate(samples, start=1):
        fields = _blank(data, Sample, exclude=["run"])
        if fields.get("index") is None:
            fields["index"] = position
        objs.append(Sample(run=run, **fields))
    return objs


def _sweep_objects(run: Run, points: Sequence[Mapping[str, Any]]) -> list[SweepPoint]:
    return [SweepPoint(run=run, **_blank(p, SweepPoint, exclude=["run"])) for p in points]


def run_create(
    *,
    rig: Rig,
    stack: Mapping[str, Any],
    model_file: Mapping[str, Any],
    configuration: Mapping[str, Any],
    workload: Mapping[str, Any],
    run: Mapping[str, Any],
    samples: Sequence[Mapping[str, Any]] = (),
    sweep_points: Sequence[Mapping[str, Any]] = (),
    concurrency_levels: Sequence[Mapping[str, Any]] = (),
) -> RunCreateResult:
    """Store a run with its samples, sweep points and concurrency levels in one transaction.

    ``run`` holds the Run's own fields (uuid, status, provenance, timestamps…);
    summary fields in it are ignored unless ``summary_source`` is 'published'.
    Return the stored run and created=True; if a run with the same uuid exists,
    return it with created=False and change nothing (runners retry). Raise
    ApplicationError if that uuid belongs to another rig."""
    run_uuid = run.get("uuid") or uuid_lib.uuid4()
    keys = {
        Stack: _stack_key(stack),
        ModelFile: _model_file_key(model_file),
        Configuration: _configuration_key(configuration),
        Workload: _workload_key(workload),
    }
    found = _ingest_lookup(rig=rig, run_uuid=run_uuid, lookups={model: key[0] for model, key in keys.items()})
    if found.existing_rig_id is not None:
        return _existing_or_complete(
            Run.objects.get(uuid=run_uuid),
            rig,
            run=run,
            samples=samples,
            sweep_points=sweep_points,
            concurrency_levels=concurrency_levels,
        )
    try:
        with transaction.atomic():
            catalog = {model: found.catalog[model] or _get_or_create(model, *key) for model, key in keys.items()}
            stored = _run_create_atomic(
                rig=rig,
                rig_gpus=found.rig_gpus,
                catalog=catalog,
                run={**run, "uuid": run_uuid},
                samples=samples,
                sweep_points=sweep_points,
                concurrency_levels=concurrency_levels,
            )
    except IntegrityError:
        # Two retries of the same run raced; the other one stored it.
        existing = Run.objects.filter(uuid=run_uuid).first()
        if existing is None:
            raise
        return _existing_or_conflict(existing, rig)
    return RunCreateResult(run=stored, created=True, rig_gpus=found.rig_gpus)


def _existing_or_conflict(existing: Run, rig: Rig) -> RunCreateResult:
    if existing.rig_id != rig.pk:
        raise ApplicationError("a run with this uuid belongs to another rig", field="uuid", status_code=409)
    return RunCreateResult(run=existing, created=False)


_ENDED = (RunStatus.FINISHED, RunStatus.FAILED, RunStatus.ABORTED)


def _existing_or_complete(
    existing: Run,
    rig: Rig,
    *,
    run: Mapping[str, Any],
    samples: Sequence[Mapping[str, Any]],
    sweep_points: Sequence[Mapping[str, Any]],
    concurrency_levels: Sequence[Mapping[str, Any]] = (),
) -> RunCreateResult:
    """Return the stored run with created=False. If it is still running and this
    document ends it (finished, failed or aborted), complete it first: add the
    samples and sweep points not stored yet, set the status, reason and log tail.

    A runner opens its run when the server is up and closes it at the end; when
    the close could not be delivered, it spools the whole run and re-posts it
    later, and that one document must be enough to finish the open run."""
    result = _existing_or_conflict(existing, rig)
    if existing.status != RunStatus.RUNNING or run.get("status") not in _ENDED:
        return result
    completed = run_append(
        run=existing,
        samples=samples,
        sweep_points=sweep_points,
        concurrency_levels=concurrency_levels,
        status=run["status"],
        failure_reason=run.get("failure_reason") or "",
        server_log_tail=run.get("server_log_tail"),
        finished_at=run.get("finished_at"),
        fingerprint=run.get("fingerprint") or None,
        extra=run.get("extra") or None,
    )
    return RunCreateResult(run=completed, created=False)


def _run_create_atomic(
    *,
    rig: Rig,
    rig_gpus: Sequence[RigGpu],
    catalog: Mapping[type[models.Model], Any],
    run: Mapping[str, Any],
    samples: Sequence[Mapping[str, Any]],
    sweep_points: Sequence[Mapping[str, Any]],
    concurrency_levels: Sequence[Mapping[str, Any]] = (),
) -> Run:
    model_obj, workload_obj = catalog[ModelFile], catalog[Workload]
    fields = _blank(run, Run, exclude=["rig", "stack", "model_file", "configuration", "workload", "comparison_key"])
    if fields.get("status") in (RunStatus.FINISHED, RunStatus.FAILED, RunStatus.ABORTED) and not fields.get(
        "finished_at"
    ):
        fields["finished_at"] = timezone.now()
    new_run = Run(
        rig=rig,
        stack=catalog[Stack],
        model_file=model_obj,
        configuration=catalog[Configuration],
        workload=workload_obj,
        comparison_key=run_comparison_key(rig=rig, model_file=model_obj, workload=workload_obj, rig_gpus=rig_gpus),
        **fields,
    )
    sample_objs = _sample_objects(new_run, samples)
    run_summary_apply(run=new_run, samples=sample_objs)
    sweep_objs = _sweep_objects(new_run, sweep_points)
    if ingest_sql.applies():
        ingest_sql.run_rows_insert(run=new_run, samples=sample_objs, points=sweep_objs)
    else:
        new_run.save()
        Sample.objects.bulk_create(sample_objs)
        SweepPoint.objects.bulk_create(sweep_objs)
    # In the order the detail lists them (Sample/SweepPoint Meta.ordering; NULL depths last).
    attach_prefetched(new_run, "samples", sorted(sample_objs, key=lambda s: s.index))
    attach_prefetched(
        new_run, "sweep_points", sorted(sweep_objs, key=lambda p: (p.ctx_tokens is None, p.ctx_tokens or 0))
    )
    levels = concurrency_levels_create(run=new_run, levels=concurrency_levels)
    attach_prefetched(new_run, "concurrency_levels", sorted(levels, key=lambda lv: lv.concurrency))
    return new_run


def run_append(
    *,
    run: Run,
    samples: Sequence[Mapping[str, Any]] = (),
    sweep_points: Sequence[Mapping[str, Any]] = (),
    concurrency_levels: Sequence[Mapping[str, Any]] = (),
    status: str | None = None,
    failure_reason: str | None = None,
    server_log_tail: str | None = None,
    finished_at: Any = None,
    fingerprint: Mapping[str, Any] | None = None,
    extra: Mapping[str, Any] | None = None,
) -> Run:
    """Add samples / sweep points / concurrency levels to an open run and optionally finish it.

    Samples whose index is already stored, sweep points whose ctx_tokens is, and
    levels whose concurrency is, are skipped (a retried request adds nothing twice). Finishing a run that
    already ended with the same ``status`` returns it unchanged (a retried
    finish). Raise ApplicationError (409) if the run is no longer running
    otherwise, and (400) when finishing as 'finished' a run with no samples."""
    with transaction.atomic():
        locked = Run.objects.select_for_update().get(pk=run.pk)
        if locked.status != RunStatus.RUNNING:
            if status is not None and status == locked.status:
                return locked
            raise ApplicationError(f"run is {locked.status}, not running", field="status", status_code=409)
        stored_indexes = set(locked.samples.values_list("index", flat=True))
        next_index = max(stored_indexes, default=0) + 1
        new_samples = []
        for data in samples:
            fields = _blank(data, Sample, exclude=["run"])
            if fields.get("index") is None:
                fields["index"] = next_index
            if fields["index"] in stored_indexes:
                continue
            stored_indexes.add(fields["index"])
            next_index = max(stored_indexes) + 1
            new_samples.append(Sample(run=locked, **fields))
        if status == RunStatus.FINISHED and not stored_indexes:
            raise ApplicationError(
                "a finished run needs at least one sample; finish it as failed or aborted", field="samples"
            )
        Sample.objects.bulk_create(new_samples)
        stored_depths = set(locked.sweep_points.values_list("ctx_tokens", flat=True))
        new_points = [p for p in sweep_points if p.get("ctx_tokens") not in stored_depths]
        SweepPoint.objects.bulk_create(_sweep_objects(locked, new_points))
        concurrency_levels_create(run=locked, levels=concurrency_levels)
        update_fields = ["updated_at"]
        if server_log_tail is not None:
            locked.server_log_tail = server_log_tail
            update_fields.append("server_log_tail")
        # What the runner learns only at the end (cache checks, token sources…):
        # the fingerprint is replaced, extra merged key by key.
        if fingerprint is not None:
            locked.fingerprint = dict(fingerprint)
            update_fields.append("fingerprint")
        if extra is not None:
            locked.extra = {**(locked.extra or {}), **extra}
            update_fields.append("extra")
        if status is not None and status != RunStatus.RUNNING:
            locked.status = status
            locked.finished_at = finished_at or timezone.now()
            locked.failure_reason = failure_reason or ""
            update_fields += ["status", "finished_at", "failure_reason"]
        locked.save(update_fields=update_fields)
        return run_summary_update(run=locked)

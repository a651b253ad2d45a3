"""Run ingest: one call creates (or finds) the catalog rows and stores a run
with its samples and sweep points in one transaction.

Input dicts are already validated (by the API serializers or the published
data importer); field names are the model field names.
"""

from __future__ import annotations

import uuid as uuid_lib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from leaderboard.results.models import (
    Configuration,
    ModelFile,
    Rig,
    Run,
    RunStatus,
    Sample,
    Stack,
    SweepPoint,
    Workload,
)
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
    run: Run
    created: bool


def _blank(data: Mapping[str, Any], model: type, exclude: Sequence[str] = ()) -> dict[str, Any]:
    """Return ``data`` restricted to ``model``'s concrete fields, with '' for missing text fields
    and None for other missing ones, so natural-key lookups match."""
    out: dict[str, Any] = {}
    for field in model._meta.concrete_fields:  # type: ignore[attr-defined]
        if field.primary_key or field.name in exclude:
            continue
        if field.name in data and data[field.name] is not None:
            out[field.name] = data[field.name]
        elif field.has_default():
            out[field.name] = field.get_default()
        elif field.empty_strings_allowed and not field.null:
            out[field.name] = ""
        else:
            out[field.name] = None
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


def stack_get_or_create(*, data: Mapping[str, Any]) -> Stack:
    fields = _blank(data, Stack, exclude=["notes"])
    return _get_or_create(Stack, fields, {"notes": data.get("notes") or ""})


def model_file_get_or_create(*, data: Mapping[str, Any]) -> ModelFile:
    fields = _blank(data, ModelFile)
    lookup = {k: fields[k] for k in ("name", "repo", "quantization", "sha256")}
    return _get_or_create(ModelFile, lookup, {k: v for k, v in fields.items() if k not in lookup})


def configuration_get_or_create(*, data: Mapping[str, Any]) -> Configuration:
    fields = _blank(data, Configuration, exclude=["config_hash"])
    return _get_or_create(Configuration, {"config_hash": config_hash(fields)}, fields)


def workload_get_or_create(*, data: Mapping[str, Any]) -> Workload:
    fields = _blank(data, Workload, exclude=["description"])
    return _get_or_create(Workload, fields, {"description": data.get("description") or ""})


def _workload_identity(workload: Workload) -> str:
    return f"{workload.name}|{workload.version}|{workload.prompt_sha256}|{workload.max_tokens}"


def run_comparison_key(*, rig: Rig, model_file: ModelFile, workload: Workload) -> str:
    gpus = [{"model": g.model, "count": g.count} for g in rig.gpus.all()]
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
) -> RunCreateResult:
    """Store a run with its samples and sweep points in one transaction.

    ``run`` holds the Run's own fields (uuid, status, provenance, timestamps…);
    summary fields in it are ignored unless ``summary_source`` is 'published'.
    Return the stored run and created=True; if a run with the same uuid exists,
    return it with created=False and change nothing (runners retry). Raise
    ApplicationError if that uuid belongs to another rig."""
    run_uuid = run.get("uuid") or uuid_lib.uuid4()
    existing = Run.objects.filter(uuid=run_uuid).first()
    if existing is not None:
        return _existing_or_conflict(existing, rig)
    try:
        with transaction.atomic():
            stored = _run_create_atomic(
                rig=rig,
                stack=stack,
                model_file=model_file,
                configuration=configuration,
                workload=workload,
                run={**run, "uuid": run_uuid},
                samples=samples,
                sweep_points=sweep_points,
            )
    except IntegrityError:
        # Two retries of the same run raced; the other one stored it.
        existing = Run.objects.filter(uuid=run_uuid).first()
        if existing is None:
            raise
        return _existing_or_conflict(existing, rig)
    return RunCreateResult(run=stored, created=True)


def _existing_or_conflict(existing: Run, rig: Rig) -> RunCreateResult:
    if existing.rig_id != rig.pk:
        raise ApplicationError("a run with this uuid belongs to another rig", field="uuid", status_code=409)
    return RunCreateResult(run=existing, created=False)


def _run_create_atomic(
    *,
    rig: Rig,
    stack: Mapping[str, Any],
    model_file: Mapping[str, Any],
    configuration: Mapping[str, Any],
    workload: Mapping[str, Any],
    run: Mapping[str, Any],
    samples: Sequence[Mapping[str, Any]],
    sweep_points: Sequence[Mapping[str, Any]],
) -> Run:
    stack_obj = stack_get_or_create(data=stack)
    model_obj = model_file_get_or_create(data=model_file)
    config_obj = configuration_get_or_create(data=configuration)
    workload_obj = workload_get_or_create(data=workload)
    fields = _blank(run, Run, exclude=["rig", "stack", "model_file", "configuration", "workload", "comparison_key"])
    if fields.get("status") in (RunStatus.FINISHED, RunStatus.FAILED, RunStatus.ABORTED) and not fields.get(
        "finished_at"
    ):
        fields["finished_at"] = timezone.now()
    new_run = Run(
        rig=rig,
        stack=stack_obj,
        model_file=model_obj,
        configuration=config_obj,
        workload=workload_obj,
        comparison_key=run_comparison_key(rig=rig, model_file=model_obj, workload=workload_obj),
        **fields,
    )
    sample_objs = _sample_objects(new_run, samples)
    run_summary_apply(run=new_run, samples=sample_objs)
    new_run.save()
    Sample.objects.bulk_create(sample_objs)
    SweepPoint.objects.bulk_create(_sweep_objects(new_run, sweep_points))
    return new_run


def run_append(
    *,
    run: Run,
    samples: Sequence[Mapping[str, Any]] = (),
    sweep_points: Sequence[Mapping[str, Any]] = (),
    status: str | None = None,
    failure_reason: str | None = None,
    server_log_tail: str | None = None,
) -> Run:
    """Add samples / sweep points to an open run and optionally finish it.

    Samples whose index is already stored, and sweep points whose ctx_tokens is,
    are skipped (a retried request adds nothing twice). Finishing a run that
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
        update_fields = ["updated_at"]
        if server_log_tail is not None:
            locked.server_log_tail = server_log_tail
            update_fields.append("server_log_tail")
        if status is not None and status != RunStatus.RUNNING:
            locked.status = status
            locked.finished_at = timezone.now()
            locked.failure_reason = failure_reason or ""
            update_fields += ["status", "finished_at", "failure_reason"]
        locked.save(update_fields=update_fields)
        return run_summary_update(run=locked)

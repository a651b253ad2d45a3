"""Run ingest: one call creates (or finds) the catalog rows and stores a run
with its samples and sweep points in one transaction.

Input dicts are already validated (by the API serializers or the published
data importer); field names are the model field names. The catalog keys are
in catalog.py, the one-round-trip lookup in lookup.py, the rows built from
dicts in fields.py, and adding to an open run in append.py.
"""

from __future__ import annotations

import uuid as uuid_lib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, models, transaction
from django.utils import timezone

from leaderboard.core.errors import ApplicationError
from leaderboard.results.hardware.stored import store_ranked_shares
from leaderboard.results.models import (
    Configuration,
    ModelFile,
    Provenance,
    Rig,
    RigGpu,
    Run,
    RunStatus,
    Stack,
    SummarySource,
    Workload,
)
from leaderboard.results.services.append import run_append, run_closed_by_abort, run_closed_for_silence
from leaderboard.results.services.catalog import catalog_get_or_create, catalog_keys
from leaderboard.results.services.concurrency import concurrency_levels_create
from leaderboard.results.services.fields import blank_fields, sample_objects, sweep_objects
from leaderboard.results.services.keys import comparison_key
from leaderboard.results.services.summary import run_summary_apply
from leaderboard.results.speedups.ingest_sql import run_rows_store
from leaderboard.results.speedups.lookup import ingest_lookup
from leaderboard.results.speedups.prefetch import attach_prefetched


@dataclass(frozen=True)
class RunCreateResult:
    """``run`` is the stored run; when ``created``, its ``samples`` and
    ``sweep_points`` are prefetched (reading them costs no query) and
    ``rig_gpus`` holds the rig's GPUs as the comparison key saw them."""

    run: Run
    created: bool
    rig_gpus: tuple[RigGpu, ...] | None = None


def _workload_identity(workload: Workload) -> str:
    return f"{workload.name}|{workload.version}|{workload.prompt_sha256}|{workload.max_tokens}"


def run_comparison_key(
    *, rig: Rig, model_file: ModelFile, workload: Workload, rig_gpus: Sequence[RigGpu] | None = None
) -> str:
    """Return the run's comparison key; ``rig_gpus``, when given, saves reading the rig's GPUs."""
    gpus = [{"model": g.model, "count": g.count} for g in (rig.gpus.all() if rig_gpus is None else rig_gpus)]
    return comparison_key(gpus=gpus, model_identity=model_file.identity, workload_identity=_workload_identity(workload))


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
    summary fields in it are ignored unless ``summary_source`` is 'published' or 'printed'.
    Return the stored run and created=True; if a run with the same uuid exists,
    return it with created=False and change nothing (runners retry). Raise
    ApplicationError if that uuid belongs to another rig."""
    run_uuid = run.get("uuid") or uuid_lib.uuid4()
    parts = {"stack": stack, "model_file": model_file, "configuration": configuration, "workload": workload}
    keys = catalog_keys(parts)
    found = ingest_lookup(rig=rig, run_uuid=run_uuid, lookups={model: key[0] for model, key in keys.items()})
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
            catalog = {model: found.catalog[model] or catalog_get_or_create(model, *key) for model, key in keys.items()}
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
        # Two POSTs of the same run raced (its open and its whole finished
        # document, or two retries): the other one stored it first, and this
        # one completes it exactly as if it had arrived second.
        existing = Run.objects.filter(uuid=run_uuid).first()
        if existing is None:
            raise
        return _existing_or_complete(
            existing,
            rig,
            run=run,
            samples=samples,
            sweep_points=sweep_points,
            concurrency_levels=concurrency_levels,
        )
    return RunCreateResult(run=stored, created=True, rig_gpus=found.rig_gpus)


# The Run fields a measured payload (POST /api/runs/, docs/api.md) may set;
# summaries are the service's own and provenance is always 'measured'.
MEASURED_RUN_FIELDS = (
    "uuid",
    "status",
    "failure_reason",
    "started_at",
    "finished_at",
    "notes",
    "fingerprint",
    "server_log_tail",
    "extra",
)


def run_create_measured(
    *, rig: Rig, data: Mapping[str, Any], printed: Mapping[str, float | None] | None = None
) -> RunCreateResult:
    """Store a validated run payload (``runners.delivery.schema.validated(RunCreateInput, …)``)
    as a measured run of ``rig``.

    The one mapping from the payload to ``run_create``, shared by the API, the
    llama-bench import (its JSON, JSONL, CSV and Markdown rows) and ``manage.py
    import_runs``. ``printed``: the summary fields a tool printed for a run without
    samples (a llama-bench Markdown row's mean ± SD), stored as such
    (``summary_source='printed'``). Reported results never come this way: they come
    only from the published importer."""
    run = {name: data.get(name) for name in MEASURED_RUN_FIELDS}
    run["fingerprint"] = run["fingerprint"] or {}
    run["extra"] = run["extra"] or {}
    run["provenance"] = Provenance.MEASURED
    if printed is not None:
        run.update(printed, summary_source=SummarySource.PRINTED)
    return run_create(
        rig=rig,
        stack=data["stack"],
        model_file=data["model_file"],
        configuration=data["configuration"],
        workload=data["workload"],
        run=run,
        samples=data["samples"],
        sweep_points=data["sweep_points"],
        concurrency_levels=data.get("concurrency_levels") or [],
    )


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
    """Return the stored run with created=False, having added what this document
    brings that it lacks: to an open run, its samples, sweep points and levels
    not stored yet and, when the document ends the run (finished, failed or
    aborted), its status, reason and log tail; to a run that ended with the
    document's own status, the samples and points it lacks (a retry, or a POST
    that raced the finish). A run that ended otherwise, or that staff closed by
    aborting its job, is returned as it is: the service keeps its own account.

    A runner opens its run when the server is up and closes it at the end; when
    the close could not be delivered, it spools the whole run and re-posts it
    later, and that one document must be enough to finish the open run."""
    result = _existing_or_conflict(existing, rig)
    status = run.get("status")
    open_ = existing.status == RunStatus.RUNNING or run_closed_for_silence(existing)
    ends = status in _ENDED
    brings = bool(samples or sweep_points or concurrency_levels)
    if open_:
        if not ends and not brings:
            return result
    elif not (ends and status == existing.status and brings) or run_closed_by_abort(existing):
        # An ended run takes only rows; a document without any (a summary re-imported) adds
        # nothing, and a run closed by its job's abort takes nothing more.
        return result
    try:
        completed = run_append(
            run=existing,
            samples=samples,
            sweep_points=sweep_points,
            concurrency_levels=concurrency_levels,
            status=status if ends else None,
            failure_reason=run.get("failure_reason") or "",
            server_log_tail=run.get("server_log_tail"),
            finished_at=run.get("finished_at"),
            fingerprint=run.get("fingerprint") or None,
            extra=run.get("extra") or None,
        )
    except ApplicationError as exc:
        if exc.status_code != 409:
            raise
        # It ended otherwise meanwhile (a racing finish, an abort): the answer
        # shows the run as it now is, and the runner sees it did not end its way.
        completed = Run.objects.get(pk=existing.pk)
    return RunCreateResult(run=completed, created=False)


def run_object(
    *, rig: Rig, catalog: Mapping[type[models.Model], Any], run: Mapping[str, Any], comparison_key: str
) -> Run:
    """Return the unsaved Run of ``rig`` on the ``catalog`` rows with ``run``'s own fields;
    an ended run that gives no ``finished_at`` ends now."""
    fields = blank_fields(
        run, Run, exclude=["rig", "stack", "model_file", "configuration", "workload", "comparison_key"]
    )
    if fields.get("status") in (RunStatus.FINISHED, RunStatus.FAILED, RunStatus.ABORTED) and not fields.get(
        "finished_at"
    ):
        fields["finished_at"] = timezone.now()
    return Run(
        rig=rig,
        stack=catalog[Stack],
        model_file=catalog[ModelFile],
        configuration=catalog[Configuration],
        workload=catalog[Workload],
        comparison_key=comparison_key,
        **fields,
    )


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
    key = run_comparison_key(rig=rig, model_file=catalog[ModelFile], workload=catalog[Workload], rig_gpus=rig_gpus)
    new_run = run_object(rig=rig, catalog=catalog, run=run, comparison_key=key)
    sample_objs = sample_objects(new_run, samples)
    sweep_objs = sweep_objects(new_run, sweep_points)
    run_summary_apply(run=new_run, samples=sample_objs, sweep_points=sweep_objs)
    run_rows_store(run=new_run, samples=sample_objs, points=sweep_objs)
    store_ranked_shares([new_run])
    # In the order the detail lists them (Sample/SweepPoint Meta.ordering; NULL depths last).
    attach_prefetched(new_run, "samples", sorted(sample_objs, key=lambda s: s.index))
    attach_prefetched(
        new_run, "sweep_points", sorted(sweep_objs, key=lambda p: (p.ctx_tokens is None, p.ctx_tokens or 0))
    )
    levels = concurrency_levels_create(run=new_run, levels=concurrency_levels)
    attach_prefetched(new_run, "concurrency_levels", sorted(levels, key=lambda lv: lv.concurrency))
    return new_run

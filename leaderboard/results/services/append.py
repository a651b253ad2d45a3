"""Adding to an open run: samples and sweep points as the rig measures them,
and the end of the run (finished, failed or aborted)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from django.db import transaction
from django.utils import timezone

from leaderboard.core.errors import ApplicationError
from leaderboard.results.models import Run, RunStatus, Sample, SweepPoint
from leaderboard.results.services.concurrency import concurrency_levels_create
from leaderboard.results.services.fields import sample_object, sweep_objects
from leaderboard.results.services.summary import run_summary_update
from runners.delivery.stored import CLOSED_BY_ABORT

# ``extra`` key of a run the sweeper closed because its runner went silent
# (leaderboard/results/services/silent.py): the runner may only have been cut off.
CLOSED_FOR_SILENCE = "closed_for_silence_at"


def run_closed_by_abort(run: Run) -> bool:
    """Return True for a run closed because staff aborted its job (``jobs.services.job_abort``):
    it takes nothing more from its runner, not even a close that also says 'aborted'."""
    return run.status == RunStatus.ABORTED and bool((run.extra or {}).get(CLOSED_BY_ABORT))


def run_closed_for_silence(run: Run) -> bool:
    """Return True for a run the silence sweeper closed as aborted: one its
    runner may still reopen by sending more (an append, a finish, the whole run)."""
    return run.status == RunStatus.ABORTED and bool((run.extra or {}).get(CLOSED_FOR_SILENCE))


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
    already ended with the same ``status`` adds only what it lacks and returns it
    (a retried finish). Raise ApplicationError (409) if the run is no longer running
    otherwise, and (400) when finishing as 'finished' a run with no samples."""
    with transaction.atomic():
        locked = Run.objects.select_for_update().get(pk=run.pk)
        if run_closed_for_silence(locked):
            # The sweeper took the runner for dead, but it was only cut off from the
            # service: the run takes what it sends again, nothing measured is refused.
            locked.status, locked.finished_at, locked.failure_reason = RunStatus.RUNNING, None, ""
            locked.extra = {k: v for k, v in (locked.extra or {}).items() if k != CLOSED_FOR_SILENCE}
            locked.save(update_fields=["status", "finished_at", "failure_reason", "extra", "updated_at"])
        # A run that already ended as this request ends it (a retried finish, or
        # one that raced the whole document's POST) takes the samples it lacks
        # and nothing else: its status, times and log tail stay as first stored.
        ended_alike = (
            locked.status != RunStatus.RUNNING
            and status is not None
            and status == locked.status
            and not run_closed_by_abort(locked)
        )
        if locked.status != RunStatus.RUNNING and not ended_alike:
            raise ApplicationError(f"run is {locked.status}, not running", field="status", status_code=409)
        stored_indexes = set(locked.samples.values_list("index", flat=True))
        next_index = max(stored_indexes, default=0) + 1
        new_samples = []
        for data in samples:
            sample = sample_object(locked, data)
            if sample.index is None:
                sample.index = next_index
            if sample.index in stored_indexes:
                continue
            stored_indexes.add(sample.index)
            next_index = max(stored_indexes) + 1
            new_samples.append(sample)
        if status == RunStatus.FINISHED and not stored_indexes:
            raise ApplicationError(
                "a finished run needs at least one sample; finish it as failed or aborted", field="samples"
            )
        Sample.objects.bulk_create(new_samples)
        stored_depths = set(locked.sweep_points.values_list("ctx_tokens", flat=True))
        new_points = [p for p in sweep_points if p.get("ctx_tokens") not in stored_depths]
        SweepPoint.objects.bulk_create(sweep_objects(locked, new_points))
        levels = concurrency_levels_create(run=locked, levels=concurrency_levels)
        if ended_alike:
            return run_summary_update(run=locked) if new_samples or new_points or levels else locked
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

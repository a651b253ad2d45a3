"""A benchmark job's status report (``POST /api/jobs/{id}/status/``): its one definition.

The rig builds the report with it (``jobreport.JobReporter.report``) and the
service checks every report against it (``leaderboard/jobs/api.py``), as the run
payload does (``schema.py``). Text lengths are the service's columns; ``error``
is bounded too, since a traceback can be any length: the rig keeps its tail."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any, Literal, get_args

from pydantic import BeforeValidator, Field

from runners.delivery.schema import Payload
from runners.delivery.schema_types import Text, one_of
from runners.harness.server.errors import ServerFailure

# "expired" is the service's to set (its sweeper), never a rig's report.
ReportedStatusName = Literal["running", "finished", "failed", "aborted"]
REPORTED_STATUSES: tuple[str, ...] = get_args(ReportedStatusName)
MAX_ATTEMPT_CHARS = 64
MAX_WORKER_CHARS = 200
MAX_PROGRESS_CHARS = 500
MAX_ERROR_CHARS = 20_000
# "expired" included: the service's sweeper ends a job so, besides the rig's reports.
JobEndStatusName = Literal["finished", "failed", "aborted", "expired"]
JOB_END_STATUSES: tuple[str, ...] = get_args(JobEndStatusName)


class FailureKind(StrEnum):
    """Why a job (or the campaign trial it measures) failed, beside the server's own
    kinds (``ServerFailure``, a ServerError's kind): the rig names what it knows in
    its report, the service the rest."""

    RUN_FAILED = "run_failed"  # the run ended failed; its reason says why
    ABORTED = "aborted"
    EXPIRED = "expired"  # no worker took the job in time (the service's sweeper)
    LOST = "lost"  # a service trial whose job was deleted
    NO_MEASUREMENT = "no_measurement"  # the run finished without the objective
    INTERRUPTED = "interrupted"  # Ctrl-C on the rig
    BAD_CONFIG = "bad_config"  # the rig's config refused a value
    TIME_LIMIT = "time_limit"  # the job's soft time limit stopped it


# What a rig's report may name ('' when it knows no more than the status).
REPORTED_FAILURE_KINDS: tuple[str, ...] = (
    "",
    *ServerFailure,
    FailureKind.BAD_CONFIG,
    FailureKind.TIME_LIMIT,
    FailureKind.INTERRUPTED,
)


class JobStatusInput(Payload):
    """One report on a job: where it is now, from which attempt (delivery) on which worker."""

    status: Annotated[ReportedStatusName, BeforeValidator(one_of(REPORTED_STATUSES))]
    attempt: Text = Field(default="", max_length=MAX_ATTEMPT_CHARS, description="The delivery of the task running it.")
    worker: Text = Field(default="", max_length=MAX_WORKER_CHARS, description="The Celery worker that took the job.")
    progress: Text = Field(default="", max_length=MAX_PROGRESS_CHARS)
    error: Text = Field(default="", max_length=MAX_ERROR_CHARS)
    failure_kind: Annotated[str, BeforeValidator(one_of(REPORTED_FAILURE_KINDS))] = Field(
        default="",
        description="Why it failed, when the rig can name it (a server's kind, bad_config, time_limit, interrupted).",
    )


def status_report(
    status: str, *, attempt: str, worker: str, progress: str = "", error: str = "", failure_kind: str = ""
) -> dict[str, Any]:
    """Return the report body the service takes: ``progress`` cut to its length, ``error`` to its tail."""
    return {
        "status": status,
        "attempt": attempt[:MAX_ATTEMPT_CHARS],
        "worker": worker[:MAX_WORKER_CHARS],
        "progress": progress[:MAX_PROGRESS_CHARS],
        "error": error[-MAX_ERROR_CHARS:] if error else "",
        "failure_kind": str(failure_kind),
    }

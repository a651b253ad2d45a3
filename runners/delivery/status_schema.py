"""A benchmark job's status report (``POST /api/jobs/{id}/status/``): its one definition.

The rig builds the report with it (``jobreport.JobReporter.report``) and the
service checks every report against it (``leaderboard/jobs/api.py``), as the run
payload does (``schema.py``). Text lengths are the service's columns; ``error``
is bounded too, since a traceback can be any length: the rig keeps its tail."""

from __future__ import annotations

from typing import Annotated, Any, Literal, get_args

from pydantic import BeforeValidator, Field

from runners.delivery.schema import Payload
from runners.delivery.schema_types import Text, one_of

# "expired" is the service's to set (its sweeper), never a rig's report.
ReportedStatusName = Literal["running", "finished", "failed", "aborted"]
REPORTED_STATUSES: tuple[str, ...] = get_args(ReportedStatusName)
MAX_ATTEMPT_CHARS = 64
MAX_WORKER_CHARS = 200
MAX_PROGRESS_CHARS = 500
MAX_ERROR_CHARS = 20_000


class JobStatusInput(Payload):
    """One report on a job: where it is now, from which attempt (delivery) on which worker."""

    status: Annotated[ReportedStatusName, BeforeValidator(one_of(REPORTED_STATUSES))]
    attempt: Text = Field(default="", max_length=MAX_ATTEMPT_CHARS, description="The delivery of the task running it.")
    worker: Text = Field(default="", max_length=MAX_WORKER_CHARS, description="The Celery worker that took the job.")
    progress: Text = Field(default="", max_length=MAX_PROGRESS_CHARS)
    error: Text = Field(default="", max_length=MAX_ERROR_CHARS)


def status_report(status: str, *, attempt: str, worker: str, progress: str = "", error: str = "") -> dict[str, Any]:
    """Return the report body the service takes: ``progress`` cut to its length, ``error`` to its tail."""
    return {
        "status": status,
        "attempt": attempt[:MAX_ATTEMPT_CHARS],
        "worker": worker[:MAX_WORKER_CHARS],
        "progress": progress[:MAX_PROGRESS_CHARS],
        "error": error[-MAX_ERROR_CHARS:] if error else "",
    }

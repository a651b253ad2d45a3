"""A benchmark job: what staff asked a rig to run, and where it stands.

The job and the run it produces share one uuid (``run_uuid``), generated here
before dispatch, so a job finds its run even when the run arrives late (the
rig spooled it while the service was down)."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

from django.conf import settings
from django.db import models
from django.utils import timezone

from leaderboard.results.models import Rig, Run

# The name the rig-side worker registers (runners/tasks.py); the service only
# ever refers to it by name, so it never imports rig code.
RUN_BENCHMARK_TASK = "rigboard.run_benchmark"


class JobKind(models.TextChoices):
    SUITE = "suite", "Suite (configuration + workload)"
    SWEEP = "sweep", "Context sweep"


class JobStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    FINISHED = "finished", "Finished"
    FAILED = "failed", "Failed"
    ABORTED = "aborted", "Aborted"
    # Never picked up: no worker of the rig took it before ``expires_at``. Kept
    # apart from aborted (staff stopped it, or its worker was lost) because the
    # fix differs: bring the rig's worker online, then run it again.
    EXPIRED = "expired", "Expired (never picked up)"


TERMINAL_STATUSES = frozenset({JobStatus.FINISHED, JobStatus.FAILED, JobStatus.ABORTED, JobStatus.EXPIRED})
# What a rig may report; the service alone marks a job expired.
REPORTED_STATUSES = [JobStatus.RUNNING, JobStatus.FINISHED, JobStatus.FAILED, JobStatus.ABORTED]


def default_expiry() -> datetime:
    """Return when a job queued now expires: now + RIGBOARD_JOB_QUEUE_TTL_S."""
    return timezone.now() + timedelta(seconds=settings.RIGBOARD_JOB_QUEUE_TTL_S)


class BenchmarkJobQuerySet(models.QuerySet["BenchmarkJob"]):
    def open(self) -> BenchmarkJobQuerySet:
        """Jobs not yet finished, failed or aborted."""
        return self.filter(status__in=[JobStatus.QUEUED, JobStatus.RUNNING])


class BenchmarkJob(models.Model):
    """One benchmark job for one rig."""

    rig = models.ForeignKey(Rig, on_delete=models.CASCADE, related_name="jobs")
    kind = models.CharField(max_length=16, choices=JobKind.choices, default=JobKind.SUITE)
    spec = models.JSONField(
        default=dict,
        blank=True,
        help_text="The runner config to run: [server] or [attach], workload, sweep, model, stack. No secrets.",
    )
    status = models.CharField(max_length=16, choices=JobStatus.choices, default=JobStatus.QUEUED, db_index=True)
    celery_task_id = models.CharField(max_length=64, blank=True, db_index=True)
    run_uuid = models.UUIDField(unique=True, default=uuid.uuid4, help_text="The uuid the rig gives the run it posts.")
    soft_time_limit_s = models.PositiveIntegerField(help_text="The task is asked to stop after this many seconds.")
    time_limit_s = models.PositiveIntegerField(help_text="The task is killed after this many seconds.")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="benchmark_jobs"
    )
    rerun_of = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="reruns")
    # Which delivery of the task is running it: a redelivered message (worker
    # lost, acks_late) arrives with a new attempt id and must not run twice.
    attempt = models.CharField(max_length=64, blank=True)
    worker = models.CharField(max_length=200, blank=True, help_text="The Celery worker that took the job.")
    progress = models.CharField(max_length=500, blank=True)
    error = models.TextField(blank=True)
    failure_kind = models.CharField(
        max_length=32,
        blank=True,
        help_text="Why it failed, as the rig named it (runners/delivery/status_schema.py: a server's kind, "
        "bad_config, time_limit); empty when it named none.",
    )
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    expires_at = models.DateTimeField(
        default=default_expiry,
        help_text="A job still queued at this time expires: its message is dropped and no worker runs it.",
    )
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = BenchmarkJobQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["status", "started_at"], name="job_stuck_idx"),
            models.Index(fields=["status", "expires_at"], name="job_expiry_idx"),
        ]

    def __str__(self) -> str:
        return f"job {self.pk} ({self.get_kind_display()}) on {self.rig} [{self.status}]"

    @property
    def is_terminal(self) -> bool:
        """Return whether the job has ended (finished, failed, aborted or expired)."""
        return self.status in TERMINAL_STATUSES

    @property
    def run(self) -> Run | None:
        """Return the run this job produced, or None until the rig has posted it: one
        query, unless a list fetched its page's runs at once (selectors.jobs_attach_runs)."""
        if "_attached_run" in self.__dict__:
            return self.__dict__["_attached_run"]
        return Run.objects.filter(uuid=self.run_uuid).first()

    def attach_run(self, run: Run | None) -> None:
        """Set what ``run`` returns for this instance (the run fetched with its list's others)."""
        self.__dict__["_attached_run"] = run

    @property
    def queue_ttl(self) -> timedelta:
        """Return how long the job could wait in its queue (queued time to expiry)."""
        return self.expires_at - self.created_at

    def deadline(self, *, grace: timedelta) -> datetime | None:
        """Return when a running job is given up as lost: its start plus its hard
        time limit plus ``grace``. Return None if it has not started."""
        if self.started_at is None:
            return None
        return self.started_at + timedelta(seconds=self.time_limit_s) + grace

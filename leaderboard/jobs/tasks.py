"""Service-side Celery tasks for jobs (the service's own worker runs them on
the default queue; rig workers never see them)."""

from __future__ import annotations

from celery import shared_task

from leaderboard.jobs.services import jobs_sweep_stuck

SWEEP_TASK = "leaderboard.jobs.tasks.jobs_sweep_stuck_task"


@shared_task(name=SWEEP_TASK, ignore_result=True, time_limit=120, soft_time_limit=100)
def jobs_sweep_stuck_task() -> int:
    """Abort running jobs whose worker went silent past their time limit + grace.
    Return how many jobs changed. Scheduled every minute by celery beat (the
    PeriodicTask created by migration 0002)."""
    return len(jobs_sweep_stuck())

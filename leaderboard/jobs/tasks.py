"""Service-side Celery tasks for jobs (the service's own worker runs them on
the default queue; rig workers never see them)."""

from __future__ import annotations

from celery import shared_task

from leaderboard.jobs.services import jobs_resend_lost, jobs_sweep_stuck
from leaderboard.results.services.silent import runs_close_silent

SWEEP_TASK = "leaderboard.jobs.tasks.jobs_sweep_stuck_task"


@shared_task(name=SWEEP_TASK, ignore_result=True, time_limit=120, soft_time_limit=100)
def jobs_sweep_stuck_task() -> int:
    """Close runs whose runner went silent (RIGBOARD_RUN_SILENCE_S), then settle
    jobs: from their closed runs, or aborted when their worker was lost; send
    again queued jobs whose message the broker lost. Return how many runs and
    jobs changed. Scheduled every minute by celery beat
    (the PeriodicTask created by migration 0002); without a broker (the embedded
    default) ``manage.py sweep_stuck`` does the same."""
    return len(runs_close_silent()) + len(jobs_sweep_stuck()) + len(jobs_resend_lost())

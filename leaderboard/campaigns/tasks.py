"""Service-side Celery task for campaigns: the safety net under the job-end call (dispatch.py)."""

from __future__ import annotations

import logging

from celery import shared_task

from leaderboard.campaigns.dispatch import campaigns_advance_running

logger = logging.getLogger(__name__)

ADVANCE_TASK = "leaderboard.campaigns.tasks.campaigns_advance_task"


@shared_task(name=ADVANCE_TASK, ignore_result=True, time_limit=120, soft_time_limit=100)
def campaigns_advance_task() -> int:
    """Advance every running service campaign (``campaign_advance`` is idempotent):
    a trial whose job ended without its end moving the campaign on (a worker
    killed between the save and the commit hook, a job failed by a broker it
    could not reach) is settled and the next
    one dispatched. Scheduled every minute by celery beat (the PeriodicTask
    created by campaigns migration 0003). Return how many campaigns moved."""
    return len(campaigns_advance_running())

"""The nightly refresh of the stored bound shares (celery beat: the PeriodicTask of
migration 0013): the runs whose share is missing or was computed by another catalog
or method (``results/hardware/stored.py``)."""

from __future__ import annotations

from celery import shared_task

from leaderboard.results.hardware.stored import refresh_stale

REFRESH_BOUNDS_TASK = "results.refresh_bounds"


@shared_task(name=REFRESH_BOUNDS_TASK, ignore_result=True, time_limit=3 * 60 * 60, soft_time_limit=3 * 60 * 60 - 60)
def refresh_bounds_task() -> int:
    """Store the share of every stale run; return how many were stored."""
    return refresh_stale()

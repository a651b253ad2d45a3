"""Reads for benchmark jobs."""

from __future__ import annotations

from django.db.models import QuerySet

from leaderboard.jobs.models import BenchmarkJob
from leaderboard.results.models import Rig


def jobs_list(*, rig: Rig | None = None, rig_name: str = "", status: str = "") -> QuerySet[BenchmarkJob]:
    """Return jobs newest first, narrowed to one rig (object or name) and/or status when given."""
    jobs = BenchmarkJob.objects.select_related("rig", "created_by")
    if rig is not None:
        jobs = jobs.filter(rig=rig)
    if rig_name:
        jobs = jobs.filter(rig__name=rig_name)
    if status:
        jobs = jobs.filter(status=status)
    return jobs

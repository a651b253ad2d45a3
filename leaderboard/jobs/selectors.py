"""Reads for benchmark jobs."""

from __future__ import annotations

from collections.abc import Iterable

from django.db.models import QuerySet

from leaderboard.jobs.models import BenchmarkJob
from leaderboard.results.models import Rig, Run


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


def jobs_attach_runs(jobs: Iterable[BenchmarkJob]) -> list[BenchmarkJob]:
    """Fetch the runs of ``jobs`` (a page of a list) in one query and attach each to
    its job, so reading ``job.run`` row by row costs nothing; return the jobs."""
    jobs = list(jobs)
    runs = {run.uuid: run for run in Run.objects.filter(uuid__in=[job.run_uuid for job in jobs])}
    for job in jobs:
        job.attach_run(runs.get(job.run_uuid))
    return jobs

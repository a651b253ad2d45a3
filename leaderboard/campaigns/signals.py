"""A job that ends moves its campaign on (service-run campaigns)."""

from __future__ import annotations

from typing import Any

from django.db.models.signals import post_save
from django.dispatch import receiver

from leaderboard.campaigns.dispatch import campaign_dispatch_on_job_end
from leaderboard.jobs.models import BenchmarkJob


@receiver(post_save, sender=BenchmarkJob, dispatch_uid="campaigns-job-ended")
def job_saved(sender: type[BenchmarkJob], instance: BenchmarkJob, **kwargs: Any) -> None:
    campaign_dispatch_on_job_end(instance)

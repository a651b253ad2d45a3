"""``manage.py sweep_stuck``: what the every-minute sweeper task does, for a
service without Celery beat (the embedded default: run it from cron)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from leaderboard.jobs.services import jobs_resend_lost, jobs_sweep_stuck
from leaderboard.results.services.silent import runs_close_silent


class Command(BaseCommand):
    help = "Close runs whose runner went silent, settle jobs whose worker was lost, re-send lost jobs."

    def handle(self, *args: Any, **options: Any) -> None:
        runs = runs_close_silent()
        jobs = jobs_sweep_stuck()
        resent = jobs_resend_lost()
        self.stdout.write(
            f"closed {len(runs)} silent run(s), settled {len(jobs)} job(s), sent {len(resent)} lost job(s) again"
        )

"""The nightly dump (celery beat: the PeriodicTask of migration 0001)."""

from __future__ import annotations

from celery import shared_task

from leaderboard.opendata.services import board_dump

DUMP_TASK = "opendata.dump_board"


@shared_task(name=DUMP_TASK, ignore_result=True, time_limit=3 * 60 * 60, soft_time_limit=3 * 60 * 60 - 60)
def dump_board_task() -> str:
    """Write tonight's dump of the public board and prune the old ones; return its name."""
    return board_dump().name

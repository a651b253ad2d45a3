"""``manage.py refresh_bounds [--limit N | --workers N]``: store the memory-bandwidth bound
share of every run whose share is missing or stale (after a catalog row or the bound's code
changed, or for runs written by COPY), as the nightly task does.

``--workers N`` splits the run ids into slices and hands them to N processes (fork), each
with its own database connection: after a catalog change on a board of millions of runs
the computation, not the database, is the bound, and one process uses one core."""

from __future__ import annotations

import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import connections
from django.db.models import Max

from leaderboard.core.pools import forked_map
from leaderboard.results.hardware.stored import bound_digest, refresh_stale
from leaderboard.results.models import Run

SLICES_PER_WORKER = 8  # several slices a worker, so one slow slice does not hold the rest back


def _refresh_slice(bounds: tuple[int, int]) -> int:
    after_id, through_id = bounds
    return refresh_stale(after_id=after_id, through_id=through_id)


def refresh_in_workers(workers: int) -> int:
    """Store every stale share over ``workers`` processes; return how many were stored."""
    last_id = Run.objects.aggregate(last=Max("pk"))["last"] or 0
    slices = workers * SLICES_PER_WORKER
    step = -(-last_id // slices) or 1
    bounds = [(first, min(first + step, last_id)) for first in range(0, last_id, step)]
    connections.close_all()  # each forked process opens its own connection
    return sum(forked_map(_refresh_slice, bounds, workers=workers))


class Command(BaseCommand):
    help = "Store the bound share of every run whose share is missing or stale (the leaderboard sorts by it)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--limit", type=int, default=None, help="store at most this many (default: all)")
        parser.add_argument("--workers", type=int, default=1, help="processes, each over its own slices of run ids")

    def handle(self, *args: Any, **options: Any) -> None:
        workers, limit = options["workers"], options["limit"]
        if workers < 1:
            raise CommandError("--workers: at least 1")
        if workers > 1 and limit is not None:
            raise CommandError("--limit and --workers: give one (a limit is one process's walk along the ids)")
        started = time.perf_counter()
        stored = refresh_in_workers(workers) if workers > 1 else refresh_stale(limit)
        elapsed_s = time.perf_counter() - started
        rate = f", {stored / elapsed_s:,.0f} runs/s" if stored and elapsed_s > 0 else ""
        self.stdout.write(f"{stored} bound shares stored (digest {bound_digest()}) in {elapsed_s:.1f} s{rate}")

"""``manage.py refresh_bounds [--limit N]``: store the memory-bandwidth bound share of
every run whose share is missing or stale (after a catalog row or the bound's code
changed, or for runs written by COPY), as the nightly task does."""

from __future__ import annotations

import time
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from leaderboard.results.hardware.stored import bound_digest, refresh_stale


class Command(BaseCommand):
    help = "Store the bound share of every run whose share is missing or stale (the leaderboard sorts by it)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--limit", type=int, default=None, help="store at most this many (default: all)")

    def handle(self, *args: Any, **options: Any) -> None:
        started = time.perf_counter()
        stored = refresh_stale(options["limit"])
        elapsed_s = time.perf_counter() - started
        rate = f", {stored / elapsed_s:,.0f} runs/s" if stored and elapsed_s > 0 else ""
        self.stdout.write(f"{stored} bound shares stored (digest {bound_digest()}) in {elapsed_s:.1f} s{rate}")

"""manage.py dump_board: write the public board as Parquet and CSV with a data card and a manifest."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from leaderboard.opendata.services import board_dump


class Command(BaseCommand):
    help = (
        "Write the public board (runs, repetitions, sweep points, concurrency levels, campaign trials, "
        "nightly verdicts) as Parquet and CSV under RIGBOARD_DUMP_DIR, atomically, and prune old dumps."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dir", type=Path, help="Where the dumps live (default: RIGBOARD_DUMP_DIR).")
        parser.add_argument("--keep", type=int, help="Dumps to keep, the newest (default: RIGBOARD_DUMP_KEEP).")
        parser.add_argument("--batch-rows", type=int, default=50_000, help="Rows read and written at a time.")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["keep"] is not None and options["keep"] < 1:
            raise CommandError("--keep: keep at least 1 dump")
        if options["batch_rows"] < 1:
            raise CommandError("--batch-rows: at least 1")
        dump = board_dump(root=options["dir"], keep=options["keep"], batch_rows=options["batch_rows"])
        counts = ", ".join(f"{name} {rows}" for name, rows in dump.row_counts.items())
        self.stdout.write(f"{dump.path}: {counts}")
        if dump.pruned:
            self.stdout.write(f"pruned: {', '.join(dump.pruned)}")

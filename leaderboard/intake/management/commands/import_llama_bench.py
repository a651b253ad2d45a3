"""``manage.py import_llama_bench --rig NAME FILE…``: llama-bench output files as measured runs.

The same all-or-nothing import as ``POST /api/llama-bench/`` (one run per test
row, idempotent), for files already on the service's machine: the demo's
recorded runs, or a batch an admin was sent."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from leaderboard.core.errors import ApplicationError
from leaderboard.intake.services import llama_bench_import
from leaderboard.results.management.rig_files import rig_named
from runners.llamabench import LlamaBenchError


class Command(BaseCommand):
    help = "Import llama-bench output files (-o json, jsonl, csv or md) as runs of a rig (idempotent)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("files", nargs="+", type=Path)
        parser.add_argument("--rig", required=True, help="the rig the rows were measured on")
        parser.add_argument("--notes", default="", help="notes stored with each run")
        parser.add_argument(
            "--repetitions", type=int, default=None, help="the -r a Markdown table was run with (it does not print it)"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        rig = rig_named(options["rig"])
        for path in options["files"]:
            try:
                result = llama_bench_import(
                    rig=rig,
                    text=path.read_text(encoding="utf-8"),
                    notes=options["notes"],
                    repetitions=options["repetitions"],
                )
            except (OSError, LlamaBenchError, ApplicationError) as exc:
                raise CommandError(f"{path}: {exc}") from exc
            self.stdout.write(f"{path.name}: {len(result.runs)} rows ({result.format}), {result.created} new runs")

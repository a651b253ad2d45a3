"""``manage.py import_published``: load the articles' published figures as reported runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from leaderboard.results.services.published import DEFAULT_PATH, PublishedDataError, published_import


class Command(BaseCommand):
    help = "Import the published results file as reported runs with their sources (idempotent)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--path",
            type=Path,
            default=None,
            help=f"A published-results/1 JSON file (default: {DEFAULT_PATH.name} shipped with the app).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            report = published_import(path=options["path"])
        except PublishedDataError as exc:
            raise CommandError(str(exc)) from exc
        for line in report.lines():
            self.stdout.write(line)
        for warning in report.warnings:
            self.stderr.write(self.style.WARNING(warning))

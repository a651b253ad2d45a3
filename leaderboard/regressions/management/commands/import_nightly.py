"""``manage.py import_nightly --rig NAME FILE…``: store nightly timelines recorded
by ``scripts/record_demo_nightly.py`` (builds, runs, reports; verdicts judged
again by the service), idempotently: a build already stored is skipped."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from leaderboard.core.errors import ApplicationError
from leaderboard.regressions.services.imports import timeline_import
from leaderboard.results.models import Rig


class Command(BaseCommand):
    help = "Store recorded nightly timelines (JSON) as a rig's builds, runs and verdicts (idempotent)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("files", nargs="+", type=Path)
        parser.add_argument("--rig", required=True, help="the rig the timeline was recorded on")

    def handle(self, *args: Any, **options: Any) -> None:
        rig = Rig.objects.filter(name=options["rig"]).first()
        if rig is None:
            raise CommandError(f"no rig named {options['rig']!r} (create_rig first)")
        for path in options["files"]:
            try:
                document = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                raise CommandError(f"{path}: not a timeline JSON file ({exc})") from exc
            if not isinstance(document, dict):
                raise CommandError(f"{path}: expected a JSON object")
            try:
                result = timeline_import(rig=rig, document=document)
            except ApplicationError as exc:
                raise CommandError(f"{path}: {exc.field}: {exc.message}") from exc
            self.stdout.write(
                f"{path.name}: subscription {result.subscription.pk}, "
                f"{result.builds_created} new builds, {result.runs_created} new runs"
            )

"""``manage.py import_campaign --rig NAME FILE…``: store campaigns recorded with
``python -m runners campaign --output FILE`` (their runs, trials and outcome),
through the services the REST API uses; a campaign already stored is left as
it is (the demo's data, imported on every ``make demo``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from leaderboard.campaigns.imports import campaign_import
from leaderboard.core.errors import ApplicationError
from leaderboard.results.models import Rig


class Command(BaseCommand):
    help = "Store campaign JSON files written by `python -m runners campaign --output` (idempotent)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("files", nargs="+", type=Path)
        parser.add_argument("--rig", required=True, help="the rig the campaign ran on")

    def handle(self, *args: Any, **options: Any) -> None:
        rig = Rig.objects.filter(name=options["rig"]).first()
        if rig is None:
            raise CommandError(f"no rig named {options['rig']!r} (create_rig first)")
        for path in options["files"]:
            try:
                document = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                raise CommandError(f"{path}: not a campaign JSON file ({exc})") from exc
            if not isinstance(document, dict):
                raise CommandError(f"{path}: expected a JSON object")
            try:
                result = campaign_import(rig=rig, document=document)
            except ApplicationError as exc:
                raise CommandError(f"{path}: {exc.field}: {exc.message}") from exc
            if result.created:
                self.stdout.write(
                    f"{path.name}: stored as campaign {result.campaign.pk} "
                    f"({result.trials} trials, {result.runs_created} new runs)"
                )
            else:
                self.stdout.write(f"{path.name}: already stored as campaign {result.campaign.pk}")

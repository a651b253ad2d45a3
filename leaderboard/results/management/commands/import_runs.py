"""``manage.py import_runs --rig NAME FILE…``: store runs the runner wrote with ``--output``.

Each file holds one run payload (docs/api.md), as ``python -m runners run --no-post
--output FILE`` writes it; it is validated as ``POST /api/runs/`` validates it
(runners/delivery/schema.py) and stored as a measured run of the rig, idempotently (the run's uuid).
``--create-rig`` registers a rig with no GPUs (a CPU rig) when the name is new."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from leaderboard.core.errors import ApplicationError
from leaderboard.results.imports import run_document_store
from leaderboard.results.models import Rig
from leaderboard.results.services.rigs import rig_create


class Command(BaseCommand):
    help = "Store run JSON files written by the runner (--output) as measured runs of a rig (idempotent)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("files", nargs="+", type=Path)
        parser.add_argument("--rig", required=True, help="the rig the runs belong to")
        parser.add_argument("--create-rig", action="store_true", help="register the rig (no GPUs) if it is new")
        parser.add_argument("--cpu", default="", help="the CPU of a rig created here")
        parser.add_argument("--ram-gb", type=int, default=None, help="the RAM of a rig created here")
        parser.add_argument("--os", default="", help="the OS of a rig created here")
        parser.add_argument("--notes", default="", help="the notes of a rig created here")

    def handle(self, *args: Any, **options: Any) -> None:
        rig = Rig.objects.filter(name=options["rig"]).first()
        if rig is None:
            if not options["create_rig"]:
                raise CommandError(f"no rig named {options['rig']!r} (create_rig, or --create-rig)")
            rig = rig_create(
                name=options["rig"],
                cpu=options["cpu"],
                ram_gb=options["ram_gb"],
                os=options["os"],
                notes=options["notes"],
            )
        for path in options["files"]:
            try:
                payload = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                raise CommandError(f"{path}: not a run JSON file ({exc})") from exc
            try:
                result = run_document_store(rig=rig, document=payload)
            except ApplicationError as exc:
                raise CommandError(f"{path}: {exc}") from exc
            verb = "stored" if result.created else "already stored"
            self.stdout.write(f"{path.name}: {verb} as run {result.run.pk} ({result.run.status})")

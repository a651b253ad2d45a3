"""``manage.py import_runs --rig NAME FILE…``: store runs the runner wrote with ``--output``.

Each file holds one run payload (docs/api.md), as ``python -m runners run --no-post
--output FILE`` writes it; it is validated as ``POST /api/runs/`` validates it
(runners/delivery/schema.py) and stored as a measured run of the rig, idempotently (the run's uuid).
The files go in batches, as ``POST /api/runs/bulk/`` takes them (at most
RIGBOARD_MAX_BULK_RUNS at a time): a refused file is named with its fields, the
others are stored, and the command then fails. ``--create-rig`` registers the rig
when the name is new, with the GPUs the first run's fingerprint detected (none: a
CPU rig)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from leaderboard.results.api.batch import runs_submit
from leaderboard.results.models import Rig
from leaderboard.results.services.rigs import gpu_specs_from_fingerprint, rig_create


class Command(BaseCommand):
    help = "Store run JSON files written by the runner (--output) as measured runs of a rig (idempotent)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("files", nargs="+", type=Path)
        parser.add_argument("--rig", required=True, help="the rig the runs belong to")
        parser.add_argument(
            "--create-rig",
            action="store_true",
            help="register the rig if it is new, with the GPUs its first run's fingerprint detected",
        )
        parser.add_argument("--cpu", default="", help="the CPU of a rig created here")
        parser.add_argument("--ram-gb", type=int, default=None, help="the RAM of a rig created here")
        parser.add_argument("--os", default="", help="the OS of a rig created here")
        parser.add_argument("--notes", default="", help="the notes of a rig created here")

    def handle(self, *args: Any, **options: Any) -> None:
        documents = []
        for path in options["files"]:
            try:
                documents.append(json.loads(path.read_text(encoding="utf-8")))
            except (OSError, ValueError) as exc:
                raise CommandError(f"{path}: not a run JSON file ({exc})") from exc
        rig = Rig.objects.filter(name=options["rig"]).first()
        if rig is None:
            if not options["create_rig"]:
                raise CommandError(f"no rig named {options['rig']!r} (create_rig, or --create-rig)")
            first = documents[0] if documents and isinstance(documents[0], dict) else {}
            rig = rig_create(
                name=options["rig"],
                gpus=gpu_specs_from_fingerprint(first.get("fingerprint")),
                cpu=options["cpu"],
                ram_gb=options["ram_gb"],
                os=options["os"],
                notes=options["notes"],
            )
        # Written with --no-post, a run names no rig: it is the rig named here.
        documents = [{**d, "rig": rig.name} if isinstance(d, dict) else d for d in documents]
        refused = []
        batch = settings.RIGBOARD_MAX_BULK_RUNS
        for start in range(0, len(documents), batch):
            paths = options["files"][start : start + batch]
            for path, outcome in zip(
                paths, runs_submit(rig=rig, documents=documents[start : start + batch]), strict=True
            ):
                if outcome.run is None:
                    why = "; ".join(f"{k.split('.', 2)[2]}: {' '.join(v)}" for k, v in outcome.errors.items())
                    refused.append(f"{path}: {why}")
                    continue
                verb = "stored" if outcome.status_code == 201 else "already stored"
                self.stdout.write(f"{path.name}: {verb} as run {outcome.run.pk} ({outcome.run.status})")
        if refused:
            raise CommandError(f"{len(refused)} of {len(documents)} files refused:\n" + "\n".join(refused))

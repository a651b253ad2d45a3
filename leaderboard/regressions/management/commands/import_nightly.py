"""``manage.py import_nightly --rig NAME FILE…``: store nightly timelines recorded
by ``manage.py export_nightly`` (builds, runs, reports; verdicts judged
again by the service), idempotently: a build already stored is skipped.
``--create-rig`` registers a rig with no GPUs (a CPU rig) when the name is new,
as ``import_runs`` does."""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandParser

from leaderboard.regressions.services.imports import timeline_import
from leaderboard.results.management.rig_files import RigFilesCommand
from leaderboard.results.models import Rig
from leaderboard.results.services.rigs import rig_create


class Command(RigFilesCommand):
    help = "Store recorded nightly timelines (JSON) as a rig's builds, runs and verdicts (idempotent)."
    document_kind = "timeline"

    def add_arguments(self, parser: CommandParser) -> None:
        super().add_arguments(parser)
        parser.add_argument("--create-rig", action="store_true", help="register the rig (no GPUs) if it is new")
        parser.add_argument("--cpu", default="", help="the CPU of a rig created here")
        parser.add_argument("--notes", default="", help="the notes of a rig created here")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["create_rig"] and not Rig.objects.filter(name=options["rig"]).exists():
            rig_create(name=options["rig"], cpu=options["cpu"], notes=options["notes"])
        super().handle(*args, **options)

    def store(self, rig: Rig, document: dict[str, Any]) -> str:
        result = timeline_import(rig=rig, document=document)
        return (
            f"subscription {result.subscription.pk}, {result.builds_created} new builds, {result.runs_created} new runs"
        )

"""The shape shared by the commands that store recorded JSON documents for one
rig (``import_campaign``, ``import_nightly``): find the rig, read each file as
a JSON object, store it, and turn an ApplicationError into a CommandError that
names the file and the field. ``rig_named`` is also ``import_llama_bench``'s
(its files are text, not JSON documents)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from leaderboard.core.errors import ApplicationError
from leaderboard.results.models import Rig


def rig_named(name: str) -> Rig:
    """Return the rig called ``name``; raise CommandError if there is none."""
    rig = Rig.objects.filter(name=name).first()
    if rig is None:
        raise CommandError(f"no rig named {name!r} (create_rig first)")
    return rig


class RigFilesCommand(BaseCommand):
    """Subclasses name what a file holds (``document_kind``) and store one (``store``)."""

    document_kind = "JSON"

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("files", nargs="+", type=Path)
        parser.add_argument("--rig", required=True, help=f"the rig the {self.document_kind} was recorded on")

    def store(self, rig: Rig, document: dict[str, Any]) -> str:
        """Store ``document`` for ``rig``; return the line to print. Raise ApplicationError."""
        raise NotImplementedError

    def handle(self, *args: Any, **options: Any) -> None:
        rig = rig_named(options["rig"])
        for path in options["files"]:
            try:
                document = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                raise CommandError(f"{path}: not a {self.document_kind} JSON file ({exc})") from exc
            if not isinstance(document, dict):
                raise CommandError(f"{path}: expected a JSON object")
            try:
                line = self.store(rig, document)
            except ApplicationError as exc:
                raise CommandError(f"{path}: {exc.field}: {exc.message}") from exc
            self.stdout.write(f"{path.name}: {line}")

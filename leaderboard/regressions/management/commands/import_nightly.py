"""``manage.py import_nightly --rig NAME FILE…``: store nightly timelines recorded
by ``scripts/record_demo_nightly.py`` (builds, runs, reports; verdicts judged
again by the service), idempotently: a build already stored is skipped."""

from __future__ import annotations

from typing import Any

from leaderboard.regressions.services.imports import timeline_import
from leaderboard.results.management.rig_files import RigFilesCommand
from leaderboard.results.models import Rig


class Command(RigFilesCommand):
    help = "Store recorded nightly timelines (JSON) as a rig's builds, runs and verdicts (idempotent)."
    document_kind = "timeline"

    def store(self, rig: Rig, document: dict[str, Any]) -> str:
        result = timeline_import(rig=rig, document=document)
        return (
            f"subscription {result.subscription.pk}, {result.builds_created} new builds, {result.runs_created} new runs"
        )

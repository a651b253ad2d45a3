"""``manage.py import_campaign --rig NAME FILE…``: store campaigns recorded with
``python -m runners campaign --output FILE`` (their runs, trials and outcome),
through the services the REST API uses; a campaign already stored is left as
it is (the demo's data, imported on every ``make demo``)."""

from __future__ import annotations

from typing import Any

from leaderboard.campaigns.imports import campaign_import
from leaderboard.results.management.rig_files import RigFilesCommand
from leaderboard.results.models import Rig


class Command(RigFilesCommand):
    help = "Store campaign JSON files written by `python -m runners campaign --output` (idempotent)."
    document_kind = "campaign"

    def store(self, rig: Rig, document: dict[str, Any]) -> str:
        result = campaign_import(rig=rig, document=document)
        if result.created:
            return f"stored as campaign {result.campaign.pk} ({result.trials} trials, {result.runs_created} new runs)"
        return f"already stored as campaign {result.campaign.pk}"

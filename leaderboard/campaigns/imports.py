"""Storing a recorded campaign: the JSON ``python -m runners campaign --output``
writes (the campaign as opened, its trial records, each trial's run document),
through the same services the REST API uses, in the order the CLI posts: the
runs, the campaign, each trial, the close. Used by ``manage.py import_campaign``
(the demo's campaign measured on the development VM)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.utils.dateparse import parse_datetime

from leaderboard.campaigns.models import Campaign, CampaignOrigin
from leaderboard.campaigns.services import campaign_create, campaign_finish, trial_record
from leaderboard.core.errors import ApplicationError
from leaderboard.results.imports import run_document_store
from leaderboard.results.models import Rig
from runners.campaign.driver import CAMPAIGN_FORMAT


@dataclass(frozen=True)
class CampaignImport:
    """``created`` is False when the campaign was already stored (nothing new)."""

    campaign: Campaign
    created: bool
    runs_created: int
    trials: int


def _when(document: Mapping[str, Any], name: str) -> dt.datetime:
    value = document.get(name)
    parsed = parse_datetime(value) if isinstance(value, str) else None
    if parsed is None or parsed.tzinfo is None:
        raise ApplicationError("expected an ISO 8601 time with its offset", field=name)
    return parsed


def campaign_import(*, rig: Rig, document: Mapping[str, Any]) -> CampaignImport:
    """Store a recorded campaign of ``rig``, whole or not at all. A campaign of
    the rig with the same name and start time is taken as already stored and
    left as it is. Raise ApplicationError naming the bad field (a trial's
    field as ``trials.<i>.<field>``, a run's as ``runs.<i>.<field>``)."""
    if document.get("format") != CAMPAIGN_FORMAT:
        raise ApplicationError(f"expected {CAMPAIGN_FORMAT!r}", field="format")
    opened = document.get("campaign")
    if not isinstance(opened, Mapping):
        raise ApplicationError("expected the campaign as opened (an object)", field="campaign")
    started_at, finished_at = _when(document, "started_at"), _when(document, "finished_at")
    trials, runs = document.get("trials"), document.get("runs")
    if not isinstance(trials, list):
        raise ApplicationError("expected a list of trial records", field="trials")
    if not isinstance(runs, list):
        raise ApplicationError("expected a list of run documents", field="runs")
    existing = Campaign.objects.filter(rig=rig, name=opened.get("name"), created_at=started_at).first()
    if existing is not None:
        return CampaignImport(existing, False, 0, existing.trials.count())
    with transaction.atomic():
        runs_created = 0
        for i, run in enumerate(runs):
            if not isinstance(run, Mapping):
                raise ApplicationError("expected a run document (an object)", field=f"runs.{i}")
            try:
                runs_created += run_document_store(rig=rig, document=run).created
            except ApplicationError as exc:
                raise ApplicationError(exc.message, field=f"runs.{i}.{exc.field}") from exc
        campaign = campaign_create(rig=rig, data=opened, origin=CampaignOrigin.TERMINAL)
        campaign.created_at = started_at
        campaign.save(update_fields=["created_at"])
        for i, trial in enumerate(trials):
            if not isinstance(trial, Mapping):
                raise ApplicationError("expected a trial record (an object)", field=f"trials.{i}")
            try:
                trial_record(campaign=campaign, data=trial)
            except ApplicationError as exc:
                raise ApplicationError(exc.message, field=f"trials.{i}.{exc.field}") from exc
        campaign = campaign_finish(
            campaign=campaign, status=str(document.get("status")), reason=str(document.get("status_reason") or "")
        )
        campaign.finished_at = finished_at
        campaign.save(update_fields=["finished_at"])
    return CampaignImport(campaign, True, runs_created, len(trials))

"""Reads for campaigns: the lists, one campaign with its trials, the rig's
reported llama-server flags and the articles' tuning journeys. What a visitor
may see is decided by the rig, once (``Campaign.objects.public()`` /
``.visible_to(user)``, leaderboard/results/models): nothing here decides it again.

Every list of trials comes back through ``readable_trials`` (stored.py): a row
stored before the trial schema's checks must not take a page or answer down."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from django.http import Http404
from django.shortcuts import get_object_or_404

from leaderboard.campaigns.models import Campaign, Trial
from leaderboard.campaigns.stored import readable_trials
from leaderboard.results.models import PublishedExperiment, Rig, Run, Source

# The list shows the newest campaigns; older ones are reached by their address.
LIST_LIMIT = 200


def campaign_list_public() -> list[Campaign]:
    """Return the newest public campaigns (their rig fetched with them), at most LIST_LIMIT."""
    return list(Campaign.objects.public().select_related("rig")[:LIST_LIMIT])


def campaign_get_visible(*, campaign_id: int, viewer: Any, token_rig_id: int | None = None) -> Campaign:
    """Return campaign ``campaign_id`` with its rig. Raise Http404 when there is none
    or its rig is hidden from ``viewer`` (staff and the rig's owner see it) and from
    the holder of rig ``token_rig_id``'s token: a hidden rig's campaign is a missing one."""
    visible = Campaign.objects.visible_to(viewer, token_rig_id=token_rig_id)
    return get_object_or_404(visible.select_related("rig"), pk=campaign_id)


def campaign_get(*, campaign_id: int) -> Campaign:
    """Return campaign ``campaign_id`` with its rig, whoever's it is (for its writers:
    services.campaign_writer_check says who they are). Raise Http404 when there is none."""
    return get_object_or_404(Campaign.objects.select_related("rig"), pk=campaign_id)


def campaign_trials(*, campaign: Campaign, with_runs: bool = False) -> list[Trial]:
    """Return the trials of ``campaign`` in order, made readable (stored.readable_trials);
    ``with_runs``: with each trial's run, its model file and configuration (what the
    page's model-in-RAM axis reads)."""
    trials = campaign.trials.all()
    if with_runs:
        trials = trials.select_related("run__model_file", "run__configuration")
    return readable_trials(trials)


def rig_server_flags(rig: Rig) -> list[str] | None:
    """Return the llama-server flags the rig's latest run reported in its fingerprint
    (``server_flags``, from ``--help``); None when it has reported none yet."""
    run = Run.objects.filter(rig=rig, fingerprint__has_key="server_flags").order_by("-created_at").first()
    flags = (run.fingerprint or {}).get("server_flags") if run is not None else None
    return flags.split() if isinstance(flags, str) and flags.strip() else None


def reported_source_list() -> QuerySet[Source]:
    """Return the articles that report tuning phases (each shown as a reported campaign), by title."""
    return Source.objects.filter(experiments__isnull=False).distinct().order_by("title")


def reported_source_get(*, source_id: int) -> tuple[Source, list[PublishedExperiment]]:
    """Return source ``source_id`` and its tuning phases in order. Raise Http404 when
    there is no such source or it reports no phase."""
    source = get_object_or_404(Source, pk=source_id)
    experiments = list(source.experiments.order_by("position"))
    if not experiments:
        raise Http404("this source reports no tuning phases")
    return source, experiments

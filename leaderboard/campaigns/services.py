"""Writes: open a campaign, record a trial, close a campaign. Every refusal is an
ApplicationError naming the field (a 400 through the API's one handler)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from django.db import IntegrityError, transaction
from django.utils import timezone
from pydantic import ValidationError

from leaderboard.campaigns.models import Campaign, CampaignStatus, Trial
from leaderboard.core.errors import ApplicationError
from leaderboard.results.models import Rig, Run
from runners.campaign import schema
from runners.campaign.spec import CampaignSpec
from runners.config import ConfigError, RigConfig
from runners.delivery.schema import Payload
from runners.delivery.schema_types import field_errors

M = TypeVar("M", bound=Payload)


def campaign_input(model: type[M], data: Any) -> M:
    """Return ``data`` checked against its payload definition (runners/campaign/schema.py),
    or ``data`` itself when it is one already (the API checked it, naming every bad
    field); raise ApplicationError naming the first bad field."""
    if isinstance(data, model):
        return data
    if not isinstance(data, Mapping):
        raise ApplicationError(f"Invalid data. Expected a dictionary, but got {type(data).__name__}.", field="body")
    try:
        return model.model_validate(dict(data))
    except ValidationError as exc:
        path, reasons = next(iter(field_errors(exc).items()))
        raise ApplicationError("; ".join(reasons), field=path) from None


def campaign_create(
    *, rig: Rig, data: Mapping[str, Any] | schema.CampaignCreateInput, origin: str = "terminal"
) -> Campaign:
    """Check and store a campaign for ``rig``. ``data`` is the body of ``POST
    /api/campaigns/`` (schema.CampaignCreateInput: the spec, with ``base_config``,
    the rig config whose [server] is every trial's base)."""
    checked = campaign_input(schema.CampaignCreateInput, data)
    spec = CampaignSpec.from_input(checked)
    if origin == "service":
        _check_server_flags(rig, spec)
    base = checked.base_config or {}
    if base:
        try:
            RigConfig.from_mapping({k: v for k, v in base.items() if k != "service"})
        except ConfigError as exc:
            raise ApplicationError(exc.reason, field=f"base_config.{exc.field}") from exc
    return Campaign.objects.create(
        rig=rig,
        name=spec.name,
        spec=spec.as_dict(),
        base_config=dict(base),
        origin=origin if origin in ("terminal", "service") else "terminal",
    )


def rig_server_flags(rig: Rig) -> list[str] | None:
    """Return the llama-server flags the rig's latest run reported in its fingerprint
    (``server_flags``, from ``--help``); None when it has reported none yet."""
    run = Run.objects.filter(rig=rig, fingerprint__has_key="server_flags").order_by("-created_at").first()
    flags = (run.fingerprint or {}).get("server_flags") if run is not None else None
    return flags.split() if isinstance(flags, str) and flags.strip() else None


def _check_server_flags(rig: Rig, spec: CampaignSpec) -> None:
    # Only what the rig last reported can be checked here; with no report yet the
    # campaign is accepted and a trial with a refused flag fails with llama-server's words.
    flags = rig_server_flags(rig)
    if flags is None:
        return
    try:
        spec.check_flags(flags, where=f"rig {rig.name}'s llama-server (as its latest run reported)")
    except ConfigError as exc:
        raise ApplicationError(exc.reason, field=exc.field) from exc


def trial_record(*, campaign: Campaign, data: Mapping[str, Any] | schema.TrialInput) -> tuple[Trial, bool]:
    """Store one trial (``data``: schema.TrialInput); return (trial, created). The same
    number again returns the stored trial unchanged (the rig retries); a closed
    campaign takes no new trial (409)."""
    trial = campaign_input(schema.TrialInput, data)
    existing = campaign.trials.filter(number=trial.number).first()
    if existing is not None:
        return existing, False
    if campaign.status != CampaignStatus.RUNNING:
        raise ApplicationError(f"the campaign is {campaign.status}", field="campaign", status_code=409)
    space = campaign.spec.get("space", {})
    if set(trial.params) != set(space):
        raise ApplicationError(f"expected a value for each parameter of the space: {', '.join(space)}", field="params")
    for name, value in trial.params.items():
        if value not in space[name]:
            raise ApplicationError(f"{value!r} is not a value of the space", field=f"params.{name}")
    fields = trial.model_dump(exclude={"number", "params", "metrics", "samples"})
    try:
        with transaction.atomic():
            stored = Trial.objects.create(
                campaign=campaign,
                number=trial.number,
                params=dict(trial.params),
                metrics=dict(trial.metrics),
                samples=list(trial.samples),
                run=Run.objects.filter(uuid=trial.run_uuid).first() if trial.run_uuid else None,
                **fields,
            )
    except IntegrityError:  # the same number, posted twice at once
        return campaign.trials.get(number=trial.number), False
    return stored, True


def campaign_finish(*, campaign: Campaign, status: str, reason: str = "") -> Campaign:
    """Close a running campaign (finished, cancelled or failed: schema.CampaignFinishInput);
    a closed one is returned as it is."""
    checked = campaign_input(schema.CampaignFinishInput, {"status": status, "reason": reason})
    if campaign.status != CampaignStatus.RUNNING:
        return campaign
    campaign.status, campaign.status_reason, campaign.finished_at = checked.status, checked.reason, timezone.now()
    campaign.save(update_fields=["status", "status_reason", "finished_at"])
    # Runs that arrived after their trial (spooled on the rig) are linked now.
    for trial in campaign.trials.filter(run__isnull=True, run_uuid__isnull=False):
        trial.run = Run.objects.filter(uuid=str(trial.run_uuid)).first()
        if trial.run is not None:
            trial.save(update_fields=["run"])
    return campaign

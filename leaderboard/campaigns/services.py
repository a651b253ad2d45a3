"""Writes: open a campaign, record a trial, close a campaign, and who may. Every
refusal is an ApplicationError naming the field (a 4xx through the API's one
handler; the admin shows it on its form). The API views, the admin and the
importer all come here; dispatching a service-run campaign's trials is dispatch.py."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from django.db import IntegrityError, transaction
from django.utils import timezone
from pydantic import ValidationError

from leaderboard.campaigns.dispatch import campaign_advance
from leaderboard.campaigns.models import Campaign, CampaignOrigin, CampaignStatus, Trial
from leaderboard.campaigns.selectors import campaign_get, rig_server_flags
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


def campaign_origin(origin: str) -> CampaignOrigin:
    """Return ``origin`` as a CampaignOrigin; raise ApplicationError (field origin) for any other word."""
    try:
        return CampaignOrigin(origin)
    except ValueError:
        raise ApplicationError(f"must be one of {', '.join(CampaignOrigin.values)}", field="origin") from None


def campaign_validate(
    *, rig: Rig, data: Mapping[str, Any] | schema.CampaignCreateInput, origin: str = CampaignOrigin.TERMINAL
) -> tuple[CampaignSpec, dict[str, Any]]:
    """Return the checked spec and base config of a campaign for ``rig`` (``data``:
    schema.CampaignCreateInput); store nothing. A campaign the service runs must
    use only the flags the rig's llama-server reported and give the rig config
    with its [server] section. Raise ApplicationError naming the first bad field
    (``origin`` too: one that is no CampaignOrigin is refused)."""
    origin = campaign_origin(origin)
    checked = campaign_input(schema.CampaignCreateInput, data)
    spec = CampaignSpec.from_input(checked)
    if origin == CampaignOrigin.SERVICE:
        _check_server_flags(rig, spec)
    base = checked.base_config or {}
    if base:
        try:
            RigConfig.from_mapping({k: v for k, v in base.items() if k != "service"})
        except ConfigError as exc:
            raise ApplicationError(exc.reason, field=f"base_config.{exc.field}") from exc
    if origin == CampaignOrigin.SERVICE and not base.get("server"):
        raise ApplicationError("required: the rig config with its [server] section", field="base_config")
    return spec, dict(base)


def campaign_create(
    *, rig: Rig, data: Mapping[str, Any] | schema.CampaignCreateInput, origin: str = CampaignOrigin.TERMINAL
) -> Campaign:
    """Check a campaign for ``rig`` (campaign_validate), store it and return it, not
    started. ``data`` is the body of ``POST /api/campaigns/`` (schema.CampaignCreateInput:
    the spec, with ``base_config``, the rig config whose [server] is every trial's base)."""
    spec, base = campaign_validate(rig=rig, data=data, origin=origin)
    return Campaign.objects.create(
        rig=rig,
        name=spec.name,
        spec=spec.as_dict(),
        base_config=base,
        origin=campaign_origin(origin),
    )


def campaign_start(*, campaign: Campaign, created_by: Any = None) -> None:
    """Dispatch the first trial of a campaign the service runs (its job goes to the
    rig's queue once committed); a campaign the rig's CLI runs is left as it is.
    Raise ApplicationError when the job cannot be queued (no broker, a bad spec)."""
    if campaign.origin == CampaignOrigin.SERVICE:
        campaign_advance(campaign_id=campaign.pk, created_by=created_by)


def campaign_open(
    *, data: Mapping[str, Any] | schema.CampaignCreateInput, token_rig_id: int | None, created_by: Any = None
) -> Campaign:
    """Open a campaign from the body of ``POST /api/campaigns/`` and return it. A
    rig's token opens one its own CLI runs (a ``rig`` naming another rig is a 403);
    staff name the rig and open one the service runs, trial by trial, as jobs on
    the rig's queue: stored with its first trial dispatched, or neither."""
    checked = campaign_input(schema.CampaignCreateInput, data)
    name = checked.rig
    if token_rig_id is not None:
        rig = Rig.objects.get(pk=token_rig_id)
        if name and name != rig.name:
            raise ApplicationError(f"this token is for rig {rig.name!r}", field="rig", status_code=403)
    else:
        if not isinstance(name, str) or not name:
            raise ApplicationError("required: the rig's name", field="rig")
        found = Rig.objects.filter(name=name).first()
        if found is None:
            raise ApplicationError(f"no rig named {name!r}", field="rig")
        rig = found
    origin = CampaignOrigin.TERMINAL if token_rig_id is not None else CampaignOrigin.SERVICE
    with transaction.atomic():
        campaign = campaign_create(rig=rig, data=checked, origin=origin)
        campaign_start(campaign=campaign, created_by=created_by)
    return campaign


def campaign_for_writer(*, campaign_id: int, staff: bool, token_rig_id: int | None) -> Campaign:
    """Return campaign ``campaign_id`` for one who writes to it (a trial, a cancel, a
    finish): staff, or the holder of its own rig's token. Raise Http404 when there
    is none, ApplicationError (403) for another rig's token."""
    campaign = campaign_get(campaign_id=campaign_id)
    if not staff and token_rig_id != campaign.rig_id:
        raise ApplicationError("this campaign belongs to another rig", field="detail", status_code=403)
    return campaign


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

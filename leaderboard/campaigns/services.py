"""Writes: open a campaign, record a trial, close a campaign. Every refusal is an
ApplicationError naming the field (a 400 through the API's one handler)."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from leaderboard.campaigns.models import Campaign, CampaignStatus, Trial, TrialRole, TrialState
from leaderboard.core.errors import ApplicationError
from leaderboard.results.models import Rig, Run
from runners.campaign.figures import PER_REPETITION
from runners.campaign.spec import CampaignSpec
from runners.config import ConfigError, RigConfig


def campaign_create(*, rig: Rig, data: Mapping[str, Any], origin: str = "terminal") -> Campaign:
    """Check and store a campaign for ``rig``. ``data`` is the campaign spec with
    ``base_config`` (the rig config; its [server] is every trial's base)."""
    spec_data = {k: v for k, v in data.items() if k not in ("rig", "base_config", "origin")}
    try:
        spec = CampaignSpec.from_mapping(spec_data)
    except ConfigError as exc:
        raise ApplicationError(exc.reason, field=exc.field) from exc
    if origin == "service":
        _check_server_flags(rig, spec)
    base = data.get("base_config") or {}
    if not isinstance(base, Mapping):
        raise ApplicationError("expected a table/object (the rig config)", field="base_config")
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


_TEXT_LIMITS = {"failure_kind": 32, "failure_reason": 4000, "log_tail": 20000}


def trial_record(*, campaign: Campaign, data: Mapping[str, Any]) -> tuple[Trial, bool]:
    """Store one trial; return (trial, created). The same number again returns
    the stored trial unchanged (the rig retries)."""
    number = data.get("number")
    if isinstance(number, bool) or not isinstance(number, int) or number < 1:
        raise ApplicationError("expected a positive integer", field="number")
    existing = campaign.trials.filter(number=number).first()
    if existing is not None:
        return existing, False
    if campaign.status != CampaignStatus.RUNNING:
        raise ApplicationError(f"the campaign is {campaign.status}", field="campaign", status_code=409)
    role = data.get("role", TrialRole.SEARCH)
    if role not in TrialRole.values:
        raise ApplicationError(f"must be one of {', '.join(TrialRole.values)}", field="role")
    state = data.get("state")
    finished_states = [v for v in TrialState.values if v != TrialState.RUNNING]
    if state not in finished_states:
        raise ApplicationError(f"must be one of {', '.join(finished_states)}", field="state")
    params = data.get("params")
    space = campaign.spec.get("space", {})
    if not isinstance(params, Mapping) or set(params) != set(space):
        raise ApplicationError(f"expected a value for each parameter of the space: {', '.join(space)}", field="params")
    for name, value in params.items():
        if value not in space[name]:
            raise ApplicationError(f"{value!r} is not a value of the space", field=f"params.{name}")
    value = data.get("value")
    if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
        raise ApplicationError("expected a number or null", field="value")
    if state == TrialState.COMPLETE and value is None:
        raise ApplicationError("a complete trial has a value", field="value")
    run_uuid = _uuid(data.get("run_uuid"))
    fields: dict[str, Any] = {}
    for name, limit in _TEXT_LIMITS.items():
        text = data.get(name) or ""
        if not isinstance(text, str):
            raise ApplicationError("expected a string", field=name)
        fields[name] = text[-limit:] if name == "log_tail" else text[:limit]
    for name in ("duration_s", "measured_s"):
        number_value = data.get(name)
        if number_value is not None and (isinstance(number_value, bool) or not isinstance(number_value, int | float)):
            raise ApplicationError("expected a number or null", field=name)
        fields[name] = number_value
    metrics = data.get("metrics") or {}
    samples = data.get("samples") or []
    if not isinstance(metrics, Mapping):
        raise ApplicationError("expected an object", field="metrics")
    if not _numbers(samples):
        raise ApplicationError("expected a list of numbers", field="samples")
    repetitions = data.get("repetitions") or {}
    if not isinstance(repetitions, Mapping):
        raise ApplicationError("expected an object of metric: list of numbers", field="repetitions")
    for name, values in repetitions.items():
        if name not in PER_REPETITION:
            raise ApplicationError(f"must be one of {', '.join(PER_REPETITION)}", field=f"repetitions.{name}")
        if not _numbers(values):
            raise ApplicationError("expected a list of numbers", field=f"repetitions.{name}")
    try:
        with transaction.atomic():
            trial = Trial.objects.create(
                campaign=campaign,
                number=number,
                params=dict(params),
                state=state,
                value=value,
                metrics=dict(metrics),
                samples=list(samples),
                repetitions={name: list(values) for name, values in repetitions.items()},
                run_uuid=run_uuid,
                run=Run.objects.filter(uuid=run_uuid).first() if run_uuid else None,
                pruned=bool(data.get("pruned", False)),
                role=role,
                **fields,
            )
    except IntegrityError:  # the same number, posted twice at once
        return campaign.trials.get(number=number), False
    return trial, True


def _numbers(values: Any) -> bool:
    return isinstance(values, list) and all(
        v is None or (isinstance(v, int | float) and not isinstance(v, bool)) for v in values
    )


def _uuid(value: Any) -> uuid.UUID | None:
    if value in (None, ""):
        return None
    try:
        return uuid.UUID(str(value))
    except ValueError as exc:
        raise ApplicationError("not a uuid", field="run_uuid") from exc


def campaign_finish(*, campaign: Campaign, status: str, reason: str = "") -> Campaign:
    """Close a running campaign (finished, cancelled or failed); a closed one is returned as it is."""
    if status not in (CampaignStatus.FINISHED, CampaignStatus.CANCELLED, CampaignStatus.FAILED):
        raise ApplicationError("must be finished, cancelled or failed", field="status")
    if campaign.status != CampaignStatus.RUNNING:
        return campaign
    campaign.status, campaign.status_reason, campaign.finished_at = status, str(reason)[:2000], timezone.now()
    campaign.save(update_fields=["status", "status_reason", "finished_at"])
    # Runs that arrived after their trial (spooled on the rig) are linked now.
    for trial in campaign.trials.filter(run__isnull=True, run_uuid__isnull=False):
        trial.run = Run.objects.filter(uuid=str(trial.run_uuid)).first()
        if trial.run is not None:
            trial.save(update_fields=["run"])
    return campaign

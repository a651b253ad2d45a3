"""What a community account does with its rigs: register one (pending review),
issue and revoke its tokens, edit it; and what staff do: approve, reject, dispute."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from leaderboard.core.errors import ApplicationError
from leaderboard.intake.models import ReviewStatus, RigOwnership, RunDispute
from leaderboard.results.models import Rig, RigToken, Run
from leaderboard.results.services.rigs import GpuSpec, rig_create, rig_token_issue, rig_token_revoke

RIG_FIELDS = ("owner_name", "cpu", "cpu_cores", "ram_gb", "os", "kernel", "driver_version", "cuda_version", "notes")


@transaction.atomic
def owned_rig_register(
    *, owner: User, name: str, gpus: Sequence[GpuSpec], token_label: str = "", **fields: Any
) -> tuple[Rig, str]:
    """Create ``owner``'s rig (pending review) and its first token; return the rig
    and the raw token, shown once. Raise ApplicationError (409) for a taken name,
    (403) when the account has RIGBOARD_MAX_RIGS_PER_ACCOUNT rigs or its live tokens are at their cap."""
    most = settings.RIGBOARD_MAX_RIGS_PER_ACCOUNT
    if RigOwnership.objects.filter(owner=owner).count() >= most:
        raise ApplicationError(f"an account may register at most {most} rigs", field="name", status_code=403)
    _check_live_tokens(owner)
    rig = rig_create(
        name=name,
        gpus=gpus,
        owner=owner,
        review_status=ReviewStatus.PENDING,
        **{k: v for k, v in fields.items() if k in RIG_FIELDS},
    )
    RigOwnership.objects.create(rig=rig, owner=owner)
    _, raw = rig_token_issue(rig=rig, label=token_label or "first token")
    return rig, raw


def _check_live_tokens(owner: User) -> None:
    most = settings.RIGBOARD_MAX_LIVE_TOKENS_PER_ACCOUNT
    if RigToken.objects.active().filter(rig__ownership__owner=owner).count() >= most:
        raise ApplicationError(
            f"an account may hold at most {most} tokens that are not revoked: revoke one first",
            field="token",
            status_code=403,
        )


def owned_token_issue(*, owner: User, rig: Rig, label: str = "") -> tuple[RigToken, str]:
    """Issue a token for ``owner``'s ``rig``; return it and the raw token (shown once).
    Raise ApplicationError (403) when the account's live tokens are at their cap."""
    _check_live_tokens(owner)
    return rig_token_issue(rig=rig, label=label)


def owned_rig_get(*, owner: User, rig_id: int) -> Rig:
    """Return ``owner``'s rig ``rig_id``; raise ApplicationError (404) if it is not theirs."""
    rig = Rig.objects.filter(pk=rig_id, ownership__owner=owner).select_related("ownership").first()
    if rig is None:
        raise ApplicationError("no such rig of yours", field="rig", status_code=404)
    return rig


def owned_rig_update(*, rig: Rig, **fields: Any) -> Rig:
    for name in RIG_FIELDS:
        if name in fields:
            setattr(rig, name, fields[name])
    rig.save(update_fields=[n for n in RIG_FIELDS if n in fields])
    return rig


def owned_token_revoke(*, rig: Rig, token_id: int) -> RigToken:
    token = RigToken.objects.filter(pk=token_id, rig=rig).first()
    if token is None:
        raise ApplicationError("no such token of this rig", field="token", status_code=404)
    return rig_token_revoke(token=token)


@transaction.atomic
def rig_review(*, ownership: RigOwnership, approve: bool, reviewer: User, reason: str = "") -> RigOwnership:
    """Approve or reject a community rig; a rejection needs a reason (the owner sees it).

    The status is the rig's own (Rig.review_status): approval is the only way a
    pending or rejected rig becomes public."""
    if not approve and not reason.strip():
        raise ApplicationError("a rejection needs a reason the owner can read", field="review_reason")
    rig = ownership.rig
    rig.review_status = ReviewStatus.APPROVED if approve else ReviewStatus.REJECTED
    rig.review_reason = reason
    rig.save(update_fields=["review_status", "review_reason"])
    ownership.reviewed_at = timezone.now()
    ownership.reviewed_by = reviewer  # type: ignore[assignment]
    ownership.save(update_fields=["reviewed_at", "reviewed_by"])
    return ownership


def run_dispute(*, run: Run, reason: str, staff: User) -> RunDispute:
    """Mark ``run`` disputed with ``reason`` (replacing an earlier reason)."""
    if not reason.strip():
        raise ApplicationError("a dispute needs a reason", field="reason")
    dispute, _ = RunDispute.objects.update_or_create(run=run, defaults={"reason": reason, "created_by": staff})
    return dispute

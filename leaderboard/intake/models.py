"""Community rigs: who owns a rig and whether staff have approved it, and runs
staff dispute. A rig with no RigOwnership was made by staff (admin, create_rig)
and counts as approved, so existing rigs need no data migration."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import Q

from leaderboard.results.models import Rig, Run


class ReviewStatus(models.TextChoices):
    PENDING = "pending", "pending review"
    APPROVED = "approved", "approved"
    REJECTED = "rejected", "rejected"


class RigOwnership(models.Model):
    """A community account's rig. Its runs are stored and shown to the owner, and
    enter public lists once staff approve it."""

    rig = models.OneToOneField(Rig, on_delete=models.CASCADE, related_name="ownership")
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="owned_rigs")
    review_status = models.CharField(max_length=16, choices=ReviewStatus.choices, default=ReviewStatus.PENDING)
    review_reason = models.TextField(blank=True, help_text="Shown to the owner (why it was rejected).")
    reviewed_at = models.DateTimeField(null=True, blank=True)
    reviewed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["review_status", "created_at"], name="ownership_queue_idx")]

    def __str__(self) -> str:
        return f"{self.rig.name} ({self.get_review_status_display()})"


class RunDispute(models.Model):
    """Staff doubt a run; the reason is shown on it."""

    run = models.OneToOneField(Run, on_delete=models.CASCADE, related_name="dispute")
    reason = models.TextField()
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"dispute on run {self.run_id}"


def hidden_rig_ids() -> models.QuerySet[RigOwnership, Any]:
    """Return the ids of rigs kept out of public lists (pending or rejected), as a subquery."""
    return RigOwnership.objects.exclude(review_status=ReviewStatus.APPROVED).values("rig_id")


def public_runs_q() -> Q:
    """Return the filter keeping the runs the public may see: those of staff-made rigs
    (no ownership) and of approved community rigs. A NOT IN over the small
    ownership table, so ranking queries over the runs table gain no join."""
    return ~Q(rig_id__in=hidden_rig_ids())


def public_rigs_q() -> Q:
    return ~Q(pk__in=hidden_rig_ids())

"""Community rigs: who registered a rig and who reviewed it, and runs staff
dispute. Whether the public may see a rig is the rig's own ``review_status``
(leaderboard.results.models.Rig): removing an ownership, or its owner, leaves a
pending or rejected rig hidden."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from leaderboard.results.models import ReviewStatus, Rig, Run


class RigOwnership(models.Model):
    """A community account's rig: the review queue's entry. Its runs are stored and
    shown to the owner, and enter public lists once staff approve the rig."""

    rig = models.OneToOneField(Rig, on_delete=models.CASCADE, related_name="ownership")
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="owned_rigs")
    reviewed_at = models.DateTimeField(null=True, blank=True)
    reviewed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.rig.name} ({self.rig.get_review_status_display()})"

    @property
    def review_status(self) -> str:
        """Return the rig's review status (stored on the rig, read here for the queue)."""
        return self.rig.review_status

    @property
    def review_reason(self) -> str:
        return self.rig.review_reason

    def get_review_status_display(self) -> str:
        return self.rig.get_review_status_display()


class RunDispute(models.Model):
    """Staff doubt a run; the reason is shown on it."""

    run = models.OneToOneField(Run, on_delete=models.CASCADE, related_name="dispute")
    reason = models.TextField()
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"dispute on run {self.run_id}"


__all__ = ["ReviewStatus", "RigOwnership", "RunDispute"]

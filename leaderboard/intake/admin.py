"""The review queue: community rigs awaiting approval, and disputed runs."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from leaderboard.core.errors import ApplicationError
from leaderboard.intake.models import ReviewStatus, RigOwnership, RunDispute
from leaderboard.intake.owners import rig_review, run_dispute


class RigOwnershipForm(forms.ModelForm):
    """The queue entry's form: the rejection reason is written on the rig (Rig.review_reason)."""

    review_reason = forms.CharField(
        widget=forms.Textarea, required=False, help_text="Shown to the owner (why it was rejected)."
    )

    class Meta:
        model = RigOwnership
        fields: list[str] = []

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.instance.pk:
            self.fields["review_reason"].initial = self.instance.rig.review_reason


@admin.register(RigOwnership)
class RigOwnershipAdmin(admin.ModelAdmin):
    """Filter on "pending review" for the queue. Approve from the list; to reject,
    write the reason (the owner sees it) on the rig's page and run "Reject".

    The review status lives on the rig, so no admin action but "Approve" makes a
    rig public; the queue's entries cannot be deleted (a rig stays in the queue
    until reviewed, and deleting its owner is refused while they own it)."""

    form = RigOwnershipForm
    list_display = ["rig", "owner", "review_status", "created_at", "reviewed_at", "reviewed_by"]
    list_filter = ["rig__review_status"]
    search_fields = ["rig__name", "owner__email"]
    readonly_fields = ["rig", "owner", "review_status", "reviewed_at", "reviewed_by", "created_at"]
    fields = ["rig", "owner", "review_status", "review_reason", "reviewed_at", "reviewed_by", "created_at"]
    actions = ["approve", "reject"]
    ordering = ["rig__review_status", "created_at"]

    @admin.display(description="review status", ordering="rig__review_status")
    def review_status(self, ownership: RigOwnership) -> str:
        return ownership.rig.get_review_status_display()

    def save_model(self, request: HttpRequest, obj: RigOwnership, form: Any, change: bool) -> None:
        obj.rig.review_reason = form.cleaned_data.get("review_reason", "")
        obj.rig.save(update_fields=["review_reason"])
        super().save_model(request, obj, form, change)

    def has_delete_permission(self, request: HttpRequest, obj: RigOwnership | None = None) -> bool:
        return False

    def get_queryset(self, request: HttpRequest) -> QuerySet[RigOwnership]:
        return super().get_queryset(request).select_related("rig", "owner", "reviewed_by")

    @admin.action(description="Approve: the rig's runs enter public leaderboards")
    def approve(self, request: HttpRequest, queryset: QuerySet[RigOwnership]) -> None:
        for ownership in queryset:
            rig_review(ownership=ownership, approve=True, reviewer=request.user, reason="")  # type: ignore[arg-type]
        self.message_user(request, f"Approved {queryset.count()} rig(s).")

    @admin.action(description="Reject with the reason written on each rig")
    def reject(self, request: HttpRequest, queryset: QuerySet[RigOwnership]) -> None:
        for ownership in queryset:
            try:
                reason = ownership.rig.review_reason
                rig_review(ownership=ownership, approve=False, reviewer=request.user, reason=reason)  # type: ignore[arg-type]
            except ApplicationError as exc:
                self.message_user(request, f"{ownership.rig.name}: {exc.message}", level=messages.ERROR)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False


@admin.register(RunDispute)
class RunDisputeAdmin(admin.ModelAdmin):
    list_display = ["run", "reason", "created_by", "created_at"]
    raw_id_fields = ["run"]
    readonly_fields = ["created_by", "created_at"]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        # A dispute is about one run: to dispute another, add one for it.
        return [*self.readonly_fields, "run"] if obj is not None else list(self.readonly_fields)

    def save_model(self, request: HttpRequest, obj: RunDispute, form: Any, change: bool) -> None:
        # Through the service, as every other write: the admin's form already
        # refuses an empty reason, the service keeps one dispute per run.
        saved = run_dispute(run=obj.run, reason=obj.reason, staff=request.user)  # type: ignore[arg-type]
        obj.pk, obj.created_by, obj.created_at = saved.pk, saved.created_by, saved.created_at


__all__ = ["ReviewStatus", "RigOwnershipAdmin", "RunDisputeAdmin"]

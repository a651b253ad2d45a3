"""Staff define a campaign here (its spec and base config as JSON, checked as the
REST API checks them); saving a new one with origin "service" starts it: its
trials go to the rig's queue as benchmark jobs, one at a time."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from leaderboard.campaigns.dispatch import campaign_advance, campaign_cancel
from leaderboard.campaigns.models import Campaign, Trial
from leaderboard.core.errors import ApplicationError
from runners.campaign.spec import CampaignSpec
from runners.config import ConfigError, RigConfig


class CampaignForm(forms.ModelForm):
    class Meta:
        model = Campaign
        fields = ("rig", "name", "spec", "base_config", "origin")

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        spec = data.get("spec")
        if isinstance(spec, dict):
            try:
                data["spec"] = CampaignSpec.from_mapping(
                    {**spec, "name": data.get("name") or spec.get("name")}
                ).as_dict()
            except ConfigError as exc:
                self.add_error("spec", f"{exc.field}: {exc.reason}")
        base = data.get("base_config")
        if isinstance(base, dict) and base:
            try:
                RigConfig.from_mapping({k: v for k, v in base.items() if k != "service"})
            except ConfigError as exc:
                self.add_error("base_config", f"{exc.field}: {exc.reason}")
        return data


class TrialInline(admin.TabularInline):
    model = Trial
    extra = 0
    fields = ("number", "role", "state", "value", "params", "failure_kind", "failure_reason", "run", "job")
    readonly_fields = fields
    can_delete = False


@admin.register(Campaign)
class CampaignAdmin(admin.ModelAdmin):
    form = CampaignForm
    list_display = ("id", "name", "rig", "status", "origin", "created_at")
    list_filter = ("status", "origin")
    search_fields = ("name", "rig__name")
    readonly_fields = ("status", "status_reason", "created_at", "finished_at")
    inlines = [TrialInline]
    actions = ["advance", "cancel"]

    def save_model(self, request: HttpRequest, obj: Campaign, form: Any, change: bool) -> None:
        super().save_model(request, obj, form, change)
        if not change and obj.origin == "service":
            try:
                campaign_advance(campaign_id=obj.pk, created_by=request.user)
            except ApplicationError as exc:
                self.message_user(request, f"not started: {exc.message}", messages.ERROR)

    @admin.action(description="Dispatch the next trial (if the one in hand has ended)")
    def advance(self, request: HttpRequest, queryset: QuerySet[Campaign]) -> None:
        for campaign in queryset:
            campaign_advance(campaign_id=campaign.pk, created_by=request.user)

    @admin.action(description="Cancel (abort the trial in hand, keep its samples)")
    def cancel(self, request: HttpRequest, queryset: QuerySet[Campaign]) -> None:
        for campaign in queryset:
            campaign_cancel(campaign=campaign, reason=f"cancelled by {request.user}")


@admin.register(Trial)
class TrialAdmin(admin.ModelAdmin):
    list_display = ("campaign", "number", "role", "state", "value", "pruned", "failure_kind")
    list_filter = ("state",)
    raw_id_fields = ("run", "campaign", "job")

"""Staff define a campaign here (its spec and base config as JSON), checked and
stored by the services the REST API uses (services.campaign_validate /
campaign_create); saving a new one with origin "service" starts it: its trials
go to the rig's queue as benchmark jobs, one at a time. A stored campaign and
its trials are read-only here: they change through the services only (trials
recorded or dispatched, the campaign advanced, cancelled)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from leaderboard.campaigns.dispatch import campaign_advance, campaign_cancel
from leaderboard.campaigns.models import Campaign, CampaignOrigin, Trial
from leaderboard.campaigns.services import campaign_create, campaign_start, campaign_validate
from leaderboard.core.errors import ApplicationError

_FIELDS = ("rig", "name", "spec", "base_config", "origin")


def _create_input(data: dict[str, Any]) -> dict[str, Any]:
    """Return the form's fields as the body of ``POST /api/campaigns/`` (the spec's
    own name when the form gives none)."""
    spec = data["spec"] if isinstance(data.get("spec"), dict) else {}
    return {**spec, "name": data.get("name") or spec.get("name"), "base_config": data.get("base_config") or None}


class CampaignForm(forms.ModelForm):
    class Meta:
        model = Campaign
        fields = _FIELDS

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        rig = data.get("rig")
        if self.instance.pk is None and rig is not None and not self.errors:
            try:
                campaign_validate(
                    rig=rig, data=_create_input(data), origin=data.get("origin") or CampaignOrigin.TERMINAL
                )
            except ApplicationError as exc:
                field = "base_config" if (exc.field or "").startswith("base_config") else "spec"
                self.add_error(field, f"{exc.field}: {exc.message}")
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
    inlines = [TrialInline]
    actions = ["advance", "cancel"]

    def get_readonly_fields(self, request: HttpRequest, obj: Campaign | None = None) -> tuple[str, ...]:
        base = ("status", "status_reason", "created_at", "finished_at")
        return base if obj is None else _FIELDS + base

    def save_model(self, request: HttpRequest, obj: Campaign, form: Any, change: bool) -> None:
        if change:
            return  # nothing of a stored campaign is edited here (get_readonly_fields)
        created = campaign_create(rig=obj.rig, data=_create_input(form.cleaned_data), origin=obj.origin)
        for model_field in Campaign._meta.concrete_fields:
            setattr(obj, model_field.attname, getattr(created, model_field.attname))
        obj._state.adding = False
        try:
            campaign_start(campaign=created, created_by=request.user)
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
    """Trials to read: the rig records them (services.trial_record), the service settles them (dispatch.py)."""

    list_display = ("campaign", "number", "role", "state", "value", "pruned", "failure_kind")
    list_filter = ("state",)
    raw_id_fields = ("run", "campaign", "job")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

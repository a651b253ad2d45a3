"""Admin: subscriptions with their reference configs and a "run now" action;
builds, verdicts and alert deliveries to inspect. The nightly schedule itself
is the PeriodicTask "nightly regression" (django-celery-beat's admin)."""

from __future__ import annotations

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from leaderboard.core.errors import ApplicationError
from leaderboard.core.forms import URL_FIELD_OVERRIDES
from leaderboard.jobs.specs import spec_validate
from leaderboard.regressions.models import (
    AlertDelivery,
    BuildRecord,
    BuildRun,
    ConfirmationPair,
    ReferenceConfig,
    Subscription,
    Verdict,
)
from leaderboard.regressions.services.detection import nightly_schedule_ensure, subscription_check


class ReferenceConfigInline(admin.StackedInline):
    model = ReferenceConfig
    extra = 0


@admin.register(Subscription)
class SubscriptionAdmin(admin.ModelAdmin):
    formfield_overrides = URL_FIELD_OVERRIDES
    list_display = ["rig", "repo_url", "branch", "build_flags", "is_active", "last_head", "last_checked_at"]
    list_filter = ["is_active", "rig"]
    inlines = [ReferenceConfigInline]
    readonly_fields = ["last_head", "last_checked_at", "created_at"]
    actions = ["run_now"]

    def save_model(self, request: HttpRequest, obj: Subscription, form: object, change: bool) -> None:
        super().save_model(request, obj, form, change)
        # A subscription without the beat entry would never be checked.
        nightly_schedule_ensure()

    @admin.action(description="Run now: look up the branch head and queue a build if it is new")
    def run_now(self, request: HttpRequest, queryset: QuerySet[Subscription]) -> None:
        for sub in queryset.select_related("rig"):
            result = subscription_check(subscription=sub)
            level = messages.SUCCESS if result.build else messages.INFO
            head = (result.head or "")[:10] or "?"
            self.message_user(request, f"{sub}: head {head} — {result.reason}", level)


@admin.register(ReferenceConfig)
class ReferenceConfigAdmin(admin.ModelAdmin):
    list_display = ["name", "subscription", "is_active"]

    def save_model(self, request: HttpRequest, obj: ReferenceConfig, form: object, change: bool) -> None:
        # Checked with the runner's own parser, so a bad spec fails here, not on the rig at night.
        try:
            obj.spec = spec_validate(kind="suite", spec=obj.spec)
        except ApplicationError as exc:
            self.message_user(request, f"{exc.field}: {exc.message}", messages.ERROR)
            return
        super().save_model(request, obj, form, change)


class BuildRunInline(admin.TabularInline):
    model = BuildRun
    extra = 0
    readonly_fields = ["reference_config", "repeat", "role", "run_uuid", "status", "error", "failure_kind"]


@admin.register(BuildRecord)
class BuildRecordAdmin(admin.ModelAdmin):
    list_display = ["short_commit", "subscription", "status", "accepted", "build_time_s", "cached", "created_at"]
    list_filter = ["status", "accepted", "subscription__rig"]
    search_fields = ["commit"]
    readonly_fields = ["log_tail", "compiler", "binary_path", "build_time_s", "error", "celery_task_id"]
    inlines = [BuildRunInline]


@admin.register(Verdict)
class VerdictAdmin(admin.ModelAdmin):
    formfield_overrides = URL_FIELD_OVERRIDES
    list_display = [
        "build", "reference_config", "kind", "confirmation", "effect_pct", "p_value", "noise_floor_pct",
        "commit_from", "commit_to",
    ]  # fmt: skip
    list_filter = ["kind", "confirmation"]
    readonly_fields = ["new_run", "baseline_runs", "baseline_build"]


@admin.register(ConfirmationPair)
class ConfirmationPairAdmin(admin.ModelAdmin):
    list_display = ["build", "reference_config", "index", "a_first", "a_median", "b_median"]
    readonly_fields = ["a_run", "b_run"]


@admin.register(AlertDelivery)
class AlertDeliveryAdmin(admin.ModelAdmin):
    list_display = ["verdict", "channel", "target", "status", "attempts", "sent_at"]
    list_filter = ["channel", "status"]

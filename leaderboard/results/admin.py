"""The Django admin: staff manage every results model here. A rig's API token
is issued from the rig page (action "Issue an API token"); the raw token is
shown once in a message and only its sha256 is stored."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from leaderboard.core.forms import URL_FIELD_OVERRIDES
from leaderboard.results.models import (
    Configuration,
    ModelFile,
    PublishedComparison,
    PublishedComparisonRow,
    PublishedExperiment,
    PublishedFit,
    Rig,
    RigGpu,
    RigToken,
    Run,
    Sample,
    Source,
    Stack,
    SweepPoint,
    Workload,
)
from leaderboard.results.services.rigs import rig_token_issue, rig_token_revoke
from leaderboard.results.services.summary import run_summary_update


class RigGpuInline(admin.TabularInline):
    model = RigGpu
    extra = 1
    fields = ["model", "vram_gb", "count", "power_limit_w", "position"]


class RigTokenInline(admin.TabularInline):
    """Tokens are listed, never created or shown here: use the rig action."""

    model = RigToken
    extra = 0
    can_delete = False
    fields = ["prefix", "label", "created_at", "last_used_at", "revoked_at"]
    readonly_fields = ["prefix", "label", "created_at", "last_used_at", "revoked_at"]

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Rig)
class RigAdmin(admin.ModelAdmin):
    list_display = ["name", "owner_name", "gpu_list", "review_status", "os", "driver_version", "created_at"]
    list_filter = ["review_status"]
    search_fields = ["name", "owner_name", "gpus__model"]
    # A community rig is approved or rejected in the review queue (leaderboard.intake's
    # admin), the only way in: here the status is shown, not edited.
    readonly_fields = ["review_status", "review_reason"]
    inlines = [RigGpuInline, RigTokenInline]
    actions = ["issue_token", "revoke_tokens"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Rig]:
        return super().get_queryset(request).prefetch_related("gpus")

    @admin.display(description="GPUs")
    def gpu_list(self, rig: Rig) -> str:
        return rig.gpu_summary()

    @admin.action(description="Issue an API token (shown once)")
    def issue_token(self, request: HttpRequest, queryset: QuerySet[Rig]) -> None:
        for rig in queryset:
            token, raw = rig_token_issue(rig=rig, label=f"issued in the admin by {request.user}")
            # The only time the raw token exists outside the rig: it is not stored.
            self.message_user(
                request,
                f"API token for rig {rig.name!r} (copy it now, it will not be shown again): {raw}",
                level=messages.WARNING,
            )

    @admin.action(description="Revoke all API tokens of the selected rigs")
    def revoke_tokens(self, request: HttpRequest, queryset: QuerySet[Rig]) -> None:
        tokens = RigToken.objects.active().filter(rig__in=queryset)
        count = 0
        for token in tokens:
            rig_token_revoke(token=token)
            count += 1
        self.message_user(request, f"Revoked {count} token(s).", level=messages.SUCCESS)


@admin.register(RigToken)
class RigTokenAdmin(admin.ModelAdmin):
    list_display = ["prefix", "rig", "label", "created_at", "last_used_at", "revoked_at"]
    list_filter = ["revoked_at"]
    list_select_related = ["rig"]
    search_fields = ["prefix", "rig__name", "label"]
    readonly_fields = ["rig", "prefix", "key_hash", "created_at", "last_used_at"]
    actions = ["revoke"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        # A token made here would have no raw value to give the rig; issue it from the rig.
        return False

    @admin.action(description="Revoke the selected tokens")
    def revoke(self, request: HttpRequest, queryset: QuerySet[RigToken]) -> None:
        for token in queryset:
            rig_token_revoke(token=token)
        self.message_user(request, f"Revoked {queryset.count()} token(s).", level=messages.SUCCESS)


@admin.register(Stack)
class StackAdmin(admin.ModelAdmin):
    list_display = ["engine", "build", "image"]
    list_filter = ["engine"]
    search_fields = ["build", "build_flags", "image"]


@admin.register(ModelFile)
class ModelFileAdmin(admin.ModelAdmin):
    list_display = ["name", "quantization", "weight_format", "architecture", "total_params_b", "active_params_b"]
    list_filter = ["architecture", "weight_format"]
    search_fields = ["name", "repo", "quantization", "sha256"]


@admin.register(Configuration)
class ConfigurationAdmin(admin.ModelAdmin):
    list_display = ["config_hash", "ctx_size", "speculative_type", "draft_n_max", "flash_attn"]
    list_filter = ["speculative_type"]
    search_fields = ["config_hash", "command_line", "draft_model"]
    readonly_fields = ["config_hash"]


@admin.register(Workload)
class WorkloadAdmin(admin.ModelAdmin):
    list_display = ["name", "version", "max_tokens", "repetitions", "warmup"]
    search_fields = ["name", "prompt_sha256"]


class SampleInline(admin.TabularInline):
    model = Sample
    extra = 0
    fields = [
        "index",
        "decode_tokens_per_s_server",
        "decode_tokens_per_s_client",
        "prefill_tokens_per_s",
        "ttft_ms",
        "tokens_generated",
        "draft_n",
        "draft_n_accepted",
        "energy_j",
        "power_w_mean",
        "output_ok",
    ]


class SweepPointInline(admin.TabularInline):
    model = SweepPoint
    extra = 0


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):
    list_display = [
        "uuid",
        "rig",
        "model_file",
        "stack",
        "status",
        "provenance",
        "decode_tokens_per_s_mean",
        "created_at",
    ]
    list_filter = ["status", "provenance", "stack__engine", "configuration__speculative_type"]
    list_select_related = ["rig", "model_file", "stack"]
    search_fields = ["uuid", "rig__name", "model_file__name", "stack__build", "report_key"]
    date_hierarchy = "created_at"
    raw_id_fields = ["rig", "stack", "model_file", "configuration", "workload", "source"]
    # Summaries are computed from samples by the service; editing them here would lie.
    readonly_fields = [
        "comparison_key",
        "summary_source",
        "n_samples",
        "failed_checks",
        "decode_tokens_per_s_mean",
        "decode_tokens_per_s_median",
        "decode_tokens_per_s_stdev",
        "decode_tokens_per_s_ci95_low",
        "decode_tokens_per_s_ci95_high",
        "acceptance_pct",
        "tokens_per_kwh",
        "created_at",
        "updated_at",
    ]
    inlines = [SampleInline, SweepPointInline]

    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        """Save the inlines, then recompute the run's summary from its samples as they now
        are: a sample edited here (an output check overturned) moves the figures and the
        failed-check count the boards rank by, never leaves them stale."""
        super().save_related(request, form, formsets, change)
        run_summary_update(run=form.instance)


@admin.register(Source)
class SourceAdmin(admin.ModelAdmin):
    formfield_overrides = URL_FIELD_OVERRIDES
    list_display = ["key", "title", "author_handle", "published_date"]
    search_fields = ["key", "title", "author_handle"]


class PublishedComparisonRowInline(admin.TabularInline):
    model = PublishedComparisonRow
    extra = 0
    raw_id_fields = ["run"]


@admin.register(PublishedComparison)
class PublishedComparisonAdmin(admin.ModelAdmin):
    list_display = ["key", "title", "source"]
    list_select_related = ["source"]
    inlines = [PublishedComparisonRowInline]


@admin.register(PublishedExperiment)
class PublishedExperimentAdmin(admin.ModelAdmin):
    list_display = ["source", "position", "phase", "label", "decode_tokens_per_s"]
    list_select_related = ["source"]
    list_filter = ["source"]


@admin.register(PublishedFit)
class PublishedFitAdmin(admin.ModelAdmin):
    list_display = ["source", "name", "formula"]
    list_select_related = ["source"]

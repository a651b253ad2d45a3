from django.contrib import admin

from leaderboard.campaigns.models import Campaign, Trial


class TrialInline(admin.TabularInline):
    model = Trial
    extra = 0
    fields = ("number", "state", "value", "params", "failure_kind", "failure_reason", "run")
    readonly_fields = fields
    can_delete = False


@admin.register(Campaign)
class CampaignAdmin(admin.ModelAdmin):
    list_display = ("id", "name", "rig", "status", "origin", "created_at")
    list_filter = ("status", "origin")
    search_fields = ("name", "rig__name")
    readonly_fields = ("created_at", "finished_at")
    inlines = [TrialInline]


@admin.register(Trial)
class TrialAdmin(admin.ModelAdmin):
    list_display = ("campaign", "number", "state", "value", "failure_kind")
    list_filter = ("state",)
    raw_id_fields = ("run", "campaign")

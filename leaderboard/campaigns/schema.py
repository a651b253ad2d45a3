"""What the campaigns API answers, for the OpenAPI schema: the views build their
answers with ``api.campaign_output`` / ``api.trial_output``; these serializers
describe those shapes. What it takes is defined once, in runners/campaign/schema.py
(the request bodies' schema is generated from those models)."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers


class TrialOutputSerializer(serializers.Serializer):
    number = serializers.IntegerField()
    params = serializers.JSONField()
    state = serializers.CharField()
    value = serializers.FloatField(allow_null=True, help_text="The campaign's objective (mean over repetitions).")
    metrics = serializers.JSONField()
    samples = serializers.JSONField(help_text="The objective per repetition.")
    repetitions = serializers.JSONField(help_text="Each objective's (and peak VRAM's) value per repetition, by metric.")
    run_uuid = serializers.UUIDField(allow_null=True)
    run_id = serializers.IntegerField(allow_null=True)
    failure_kind = serializers.CharField(allow_blank=True)
    failure_reason = serializers.CharField(allow_blank=True)
    log_tail = serializers.CharField(allow_blank=True)
    pruned = serializers.BooleanField()
    role = serializers.ChoiceField(
        choices=["search", "confirmation"], help_text="confirmation: the best search trial measured again in full."
    )
    duration_s = serializers.FloatField(allow_null=True)
    measured_s = serializers.FloatField(allow_null=True)
    overhead_s = serializers.FloatField(allow_null=True)


class CampaignSummarySerializer(serializers.Serializer):
    id = serializers.IntegerField()
    rig = serializers.CharField()
    name = serializers.CharField(allow_blank=True)
    spec = serializers.JSONField()
    base_config = serializers.JSONField()
    origin = serializers.CharField()
    status = serializers.CharField()
    status_reason = serializers.CharField(allow_blank=True)
    created_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True)


class CampaignOutputSerializer(CampaignSummarySerializer):
    trials = TrialOutputSerializer(many=True)
    analysis = serializers.JSONField(help_text="Best so far, parameter effects, Pareto front, fit, recommendation.")


class CampaignListSerializer(serializers.Serializer):
    results = CampaignSummarySerializer(many=True)


# What a client can do with a campaign it has just opened: the OpenAPI links from
# POST /api/campaigns/ (schemathesis follows them: tests/test_api_fuzz.py).
_LINKS = {
    "RecordATrial": "campaigns_trials_create",
    "ReadTheCampaign": "campaigns_retrieve",
    "FinishTheCampaign": "campaigns_finish",
    "CancelTheCampaign": "campaigns_cancel",
}


def declare_links(result: dict[str, Any], generator: Any, request: Any, public: bool) -> dict[str, Any]:
    """Add the links from a created campaign (its ``id``) to the operations on it to the schema ``result``."""
    created = result.get("paths", {}).get("/api/campaigns/", {}).get("post", {}).get("responses", {}).get("201")
    if created is not None:
        created["links"] = {
            name: {"operationId": operation, "parameters": {"campaign_id": "$response.body#/id"}}
            for name, operation in _LINKS.items()
        }
    return result

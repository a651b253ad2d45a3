"""What the campaigns API takes and answers, for the OpenAPI schema: the views
build their answers with ``api.campaign_output`` / ``api.trial_output`` and check
their input with the campaign spec (``runners.campaign.spec``), which names the
bad field; these serializers describe those shapes and validate nothing."""

from __future__ import annotations

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


class CampaignCreateInputSerializer(serializers.Serializer):
    rig = serializers.CharField(required=False, help_text="Staff: the rig; a rig's token opens one for its own rig.")
    name = serializers.CharField(help_text="A short name for the campaign.")
    space = serializers.JSONField(help_text="Each parameter a list of values or {min, max, step}.")
    objective = serializers.CharField(required=False, help_text="decode_tokens_per_s (default), prefill, …")
    constraints = serializers.JSONField(required=False, help_text="A list of {metric, op, value}.")
    strategy = serializers.CharField(required=False, help_text="grid, random or adaptive")
    budget = serializers.JSONField(required=False, help_text="trials and/or wall time")
    repetitions = serializers.IntegerField(required=False)
    seed = serializers.IntegerField(required=False)
    confirm_repetitions = serializers.IntegerField(
        required=False, help_text="Repetitions of the best trial's confirmation run (default 10, at least 2; 0: none)."
    )
    base_config = serializers.JSONField(required=False, help_text="The rig config; its [server] is every trial's base.")


class TrialInputSerializer(serializers.Serializer):
    number = serializers.IntegerField(min_value=1)
    state = serializers.CharField()
    params = serializers.JSONField()
    value = serializers.FloatField(required=False, allow_null=True)
    metrics = serializers.JSONField(required=False)
    samples = serializers.JSONField(required=False)
    repetitions = serializers.JSONField(required=False)
    run_uuid = serializers.UUIDField(required=False, allow_null=True)
    failure_kind = serializers.CharField(required=False, allow_blank=True)
    failure_reason = serializers.CharField(required=False, allow_blank=True)
    log_tail = serializers.CharField(required=False, allow_blank=True)
    pruned = serializers.BooleanField(required=False)
    role = serializers.ChoiceField(choices=["search", "confirmation"], required=False)
    duration_s = serializers.FloatField(required=False, allow_null=True)


class CampaignCancelInputSerializer(serializers.Serializer):
    reason = serializers.CharField(required=False, allow_blank=True)


class CampaignFinishInputSerializer(serializers.Serializer):
    status = serializers.ChoiceField(choices=["finished", "cancelled", "failed"])
    reason = serializers.CharField(required=False, allow_blank=True)

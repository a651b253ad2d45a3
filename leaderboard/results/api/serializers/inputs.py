"""What a rig sends: the run payload of docs/api.md, validated field by field.

Bounds reject figures no real rig can produce, which in practice are unit bugs
(tokens per millisecond sent as per second, bytes sent as MiB) or garbage from
a crashed measurement; each bound is a few orders of magnitude above the best
figure published for any hardware, so no honest result is refused. Summary
fields and ``provenance`` are not declared, so a client's values for them are
dropped: the service computes summaries, and everything submitted through the
API is *measured* (reported figures come only from the importer)."""

from __future__ import annotations

import math
from typing import Any

from django.conf import settings
from django.db import models
from rest_framework import serializers

from leaderboard.results.api.serializers.fields import (
    AwareDateTimeField,
    NumberField,
    StrictBooleanField,
    StrictCharField,
    StrictUUIDField,
    number,
    whole,
)
from leaderboard.results.models import (
    Architecture,
    Configuration,
    Engine,
    ModelFile,
    RunStatus,
    Sample,
    SpeculativeType,
    Stack,
    SweepPoint,
    Workload,
)
from leaderboard.results.models import Run as RunModel

# Decode: the fastest published single-stream decoders reach a few thousand
# tokens/s and batched small models tens of thousands; 100k t/s is a unit bug.
MAX_DECODE_TOKENS_PER_S = 100_000
# Prefill runs in parallel over the prompt; big GPUs reach ~100k t/s on small
# models. 10M t/s is two orders of magnitude above that.
MAX_PREFILL_TOKENS_PER_S = 10_000_000
MAX_TTFT_MS = 24 * 60 * 60 * 1000  # a day: anything longer is a hung request
MAX_TOKENS = 100_000_000  # the largest context windows are ~10M tokens
MAX_POWER_W = 100_000  # a full rack; a 16-GPU box draws ~16 kW
MAX_ENERGY_J = 10_000_000_000  # 100 kW for a day
MAX_VRAM_MIB = 16 * 1024 * 1024  # 16 TiB across all GPUs
MAX_TOKENS_PER_KWH = 1e12
MAX_ITL_GAPS = 200_000  # one gap per generated token; a request of 200k tokens is beyond any run

# The statuses a run can end with (POST /api/runs/{uuid}/finish/).
RUN_END_STATUS_CHOICES = [c for c in RunStatus.choices if c[0] != RunStatus.RUNNING]


def text(model: type[models.Model], name: str, *, required: bool = False) -> StrictCharField:
    """A text field as long as the model column allows; optional ones accept null as ''."""
    max_length = getattr(model._meta.get_field(name), "max_length", None)
    limits = {"max_length": max_length} if max_length else {}
    return StrictCharField(
        **limits,
        required=required,
        allow_blank=not required,
        allow_null=not required,
        trim_whitespace=False,
    )


def choice(choices: type[models.TextChoices], *, required: bool = False) -> serializers.ChoiceField:
    allowed = ", ".join(choices.values)
    return serializers.ChoiceField(
        choices=choices.choices,
        required=required,
        error_messages={"invalid_choice": f'"{{input}}" is not one of: {allowed}.'},
    )


class JSONObjectField(serializers.JSONField):
    def to_internal_value(self, data: Any) -> Any:
        if not isinstance(data, dict):
            raise serializers.ValidationError("A JSON object is required.")
        return super().to_internal_value(data)


class StringListField(serializers.ListField):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(child=StrictCharField(max_length=500, allow_blank=True), max_length=200, **kwargs)


class ItlListField(serializers.ListField):
    """Inter-token gaps of one stream, ms: as many as a request has tokens.

    Checked in one loop rather than by a child field per item: a run carries
    tens of thousands of gaps, and DRF's per-item machinery would cost more
    than the rest of the run's validation."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(child=NumberField(min_value=0, max_value=MAX_TTFT_MS), **kwargs)

    def to_internal_value(self, data: Any) -> list[float]:
        if not isinstance(data, list):
            raise serializers.ValidationError(f"A list of numbers is required, not {type(data).__name__}.")
        if len(data) > MAX_ITL_GAPS:
            raise serializers.ValidationError(f"At most {MAX_ITL_GAPS} gaps.")
        for position, value in enumerate(data):
            if (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not math.isfinite(value)
                or not 0 <= value <= MAX_TTFT_MS
            ):
                raise serializers.ValidationError(
                    f"Item {position}: a gap in ms between 0 and {MAX_TTFT_MS} is required, got {value!r}."
                )
        return [float(v) for v in data]


class StackInputSerializer(serializers.Serializer):
    engine = choice(Engine, required=True)
    build = text(Stack, "build")
    build_flags = text(Stack, "build_flags")
    image = text(Stack, "image")


class ModelFileInputSerializer(serializers.Serializer):
    name = text(ModelFile, "name", required=True)
    repo = text(ModelFile, "repo")
    architecture = choice(Architecture)
    total_params_b = number(max_value=100_000)
    active_params_b = number(max_value=100_000)
    experts_total = whole(max_value=1_000_000)
    experts_active = whole(max_value=1_000_000)
    layers = whole(max_value=100_000)
    quantization = text(ModelFile, "quantization")
    weight_format = text(ModelFile, "weight_format")
    file_size_bytes = whole(max_value=10**15)
    sha256 = serializers.RegexField(r"^[0-9a-fA-F]{64}$", required=False, allow_blank=True, allow_null=True)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        total, active = attrs.get("total_params_b"), attrs.get("active_params_b")
        if total is not None and active is not None and active > total:
            raise serializers.ValidationError({"active_params_b": ["Active parameters exceed total parameters."]})
        if attrs.get("sha256"):
            attrs["sha256"] = attrs["sha256"].lower()
        return attrs


class ConfigurationInputSerializer(serializers.Serializer):
    ctx_size = whole(max_value=MAX_TOKENS)
    cache_type_k = text(Configuration, "cache_type_k")
    cache_type_v = text(Configuration, "cache_type_v")
    batch_size = whole(max_value=MAX_TOKENS)
    ubatch_size = whole(max_value=MAX_TOKENS)
    parallel = whole(max_value=100_000)
    flash_attn = text(Configuration, "flash_attn")
    # llama.cpp takes -1 (auto) and 999 ("all") for --n-gpu-layers.
    n_gpu_layers = whole(min_value=-1, max_value=100_000)
    tensor_split = text(Configuration, "tensor_split")
    tensor_overrides = text(Configuration, "tensor_overrides")
    threads = whole(max_value=100_000)
    speculative_type = choice(SpeculativeType)
    draft_model = text(Configuration, "draft_model")
    draft_n_max = whole(max_value=100_000)
    thinking = StrictBooleanField(required=False, allow_null=True)
    temperature = number(max_value=100)
    top_k = whole(min_value=-1, max_value=10_000_000)
    top_p = number(max_value=1)
    min_p = number(max_value=1)
    extra_args = StringListField(required=False, allow_null=True)
    command_line = text(Configuration, "command_line")


class WorkloadInputSerializer(serializers.Serializer):
    name = text(Workload, "name", required=True)
    version = StrictCharField(max_length=32, required=False, default="1")
    prompt_sha256 = text(Workload, "prompt_sha256")
    max_tokens = whole(max_value=MAX_TOKENS)
    repetitions = whole(max_value=100_000)
    warmup = whole(max_value=100_000)


class SettingBoundedListSerializer(serializers.ListSerializer):
    """A list whose maximum length is a setting read per request (tests may override it),
    and whose items must not repeat ``unique_field``."""

    max_length_setting = ""
    unique_field = ""

    def to_internal_value(self, data: Any) -> Any:
        self.max_length = getattr(settings, self.max_length_setting)
        try:
            value = super().to_internal_value(data)
            errors: dict[Any, Any] = {}
        except serializers.ValidationError as exc:
            if not isinstance(exc.detail, dict) or not all(isinstance(k, int) for k in exc.detail):
                raise  # not a list, too long: nothing per item to add
            errors, value = dict(exc.detail), None
        if self.unique_field:
            seen: dict[Any, int] = {}
            for position, item in enumerate(data):
                key = item.get(self.unique_field) if isinstance(item, dict) else None
                if not isinstance(key, int) or isinstance(key, bool):
                    continue
                if key in seen:
                    message = f"Duplicate {self.unique_field} {key} (also at position {seen[key]})."
                    errors.setdefault(position, {}).setdefault(self.unique_field, []).append(message)
                else:
                    seen[key] = position
        if errors:
            raise serializers.ValidationError(errors)  # type: ignore[arg-type]  # keyed by position, as DRF does
        return value


class SampleListSerializer(SettingBoundedListSerializer):
    max_length_setting = "RIGBOARD_MAX_SAMPLES"
    unique_field = "index"


class SweepPointListSerializer(SettingBoundedListSerializer):
    max_length_setting = "RIGBOARD_MAX_SWEEP_POINTS"
    unique_field = "ctx_tokens"


class SampleInputSerializer(serializers.Serializer):
    index = whole(min_value=1, max_value=1_000_000, required=True)
    decode_tokens_per_s_server = number(max_value=MAX_DECODE_TOKENS_PER_S)
    decode_tokens_per_s_client = number(max_value=MAX_DECODE_TOKENS_PER_S)
    prefill_tokens_per_s = number(max_value=MAX_PREFILL_TOKENS_PER_S)
    ttft_ms = number(max_value=MAX_TTFT_MS)
    prompt_tokens = whole(max_value=MAX_TOKENS)
    tokens_generated = whole(max_value=MAX_TOKENS)
    draft_n = whole(max_value=MAX_TOKENS)
    draft_n_accepted = whole(max_value=MAX_TOKENS)
    energy_j = number(max_value=MAX_ENERGY_J)
    power_w_mean = number(max_value=MAX_POWER_W)
    power_w_peak = number(max_value=MAX_POWER_W)
    vram_peak_mib = number(max_value=MAX_VRAM_MIB)
    stop_reason = text(Sample, "stop_reason")
    output_ok = StrictBooleanField(required=False, allow_null=True)
    flags = StringListField(required=False, allow_null=True)
    itl_ms = ItlListField(required=False, allow_null=True)

    class Meta:
        list_serializer_class = SampleListSerializer

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        drafted, accepted = attrs.get("draft_n"), attrs.get("draft_n_accepted")
        if drafted is not None and accepted is not None and accepted > drafted:
            raise serializers.ValidationError(
                {"draft_n_accepted": [f"Accepted draft tokens ({accepted}) exceed drafted tokens ({drafted})."]}
            )
        return attrs


class SweepPointInputSerializer(serializers.Serializer):
    ctx_tokens = whole(max_value=MAX_TOKENS, required=True)
    ctx_label = text(SweepPoint, "ctx_label")
    prefill_tokens_per_s = number(max_value=MAX_PREFILL_TOKENS_PER_S)
    decode_tokens_per_s = number(max_value=MAX_DECODE_TOKENS_PER_S)
    ttft_ms = number(max_value=MAX_TTFT_MS)
    power_w = number(max_value=MAX_POWER_W)
    energy_j = number(max_value=MAX_ENERGY_J)
    tokens_per_kwh = number(max_value=MAX_TOKENS_PER_KWH)
    note = text(SweepPoint, "note")

    class Meta:
        list_serializer_class = SweepPointListSerializer


class ConcurrencyRequestListSerializer(SettingBoundedListSerializer):
    max_length_setting = "RIGBOARD_MAX_LEVEL_REQUESTS"
    unique_field = "index"


class ConcurrencyRequestInputSerializer(serializers.Serializer):
    index = whole(min_value=1, max_value=1_000_000, required=True)
    stream = whole(min_value=1, max_value=100_000, required=True)
    started_s = number(max_value=MAX_TTFT_MS / 1000)
    ended_s = number(max_value=MAX_TTFT_MS / 1000)
    ttft_ms = number(max_value=MAX_TTFT_MS)
    decode_tokens_per_s_client = number(max_value=MAX_DECODE_TOKENS_PER_S)
    decode_tokens_per_s_server = number(max_value=MAX_DECODE_TOKENS_PER_S)
    prompt_tokens = whole(max_value=MAX_TOKENS)
    tokens_generated = whole(max_value=MAX_TOKENS)
    draft_n = whole(max_value=MAX_TOKENS)
    draft_n_accepted = whole(max_value=MAX_TOKENS)
    itl_ms = ItlListField(required=False, allow_null=True)
    error = StrictCharField(max_length=2000, required=False, allow_blank=True, allow_null=True)

    class Meta:
        list_serializer_class = ConcurrencyRequestListSerializer

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        errors: dict[str, list[str]] = {}
        drafted, accepted = attrs.get("draft_n"), attrs.get("draft_n_accepted")
        if drafted is not None and accepted is not None and accepted > drafted:
            errors["draft_n_accepted"] = [f"Accepted draft tokens ({accepted}) exceed drafted tokens ({drafted})."]
        started, ended = attrs.get("started_s"), attrs.get("ended_s")
        if started is not None and ended is not None and ended < started:
            errors["ended_s"] = ["ended_s is before started_s."]
        if errors:
            raise serializers.ValidationError(errors)
        return attrs


class ConcurrencyLevelListSerializer(SettingBoundedListSerializer):
    max_length_setting = "RIGBOARD_MAX_CONCURRENCY_LEVELS"
    unique_field = "concurrency"


class ConcurrencyLevelInputSerializer(serializers.Serializer):
    concurrency = whole(min_value=1, max_value=100_000, required=True)
    n_requests = whole(min_value=1, max_value=1_000_000, required=True)
    wall_s = number(max_value=MAX_TTFT_MS / 1000)
    energy_j = number(max_value=MAX_ENERGY_J)
    power_w_mean = number(max_value=MAX_POWER_W)
    draft_n = whole(max_value=MAX_TOKENS)
    draft_n_accepted = whole(max_value=MAX_TOKENS)
    note = StrictCharField(required=False, allow_blank=True, allow_null=True, max_length=10_000)
    requests = ConcurrencyRequestInputSerializer(many=True, required=False, default=list)

    class Meta:
        list_serializer_class = ConcurrencyLevelListSerializer

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        requests = attrs.get("requests") or []
        if len(requests) > attrs["n_requests"]:
            raise serializers.ValidationError(
                {"requests": [f"{len(requests)} requests, more than n_requests ({attrs['n_requests']})."]}
            )
        over = [r["stream"] for r in requests if r["stream"] > attrs["concurrency"]]
        if over:
            raise serializers.ValidationError(
                {"requests": [f"Stream {over[0]} is beyond the level's {attrs['concurrency']} streams."]}
            )
        drafted, accepted = attrs.get("draft_n"), attrs.get("draft_n_accepted")
        if drafted is not None and accepted is not None and accepted > drafted:
            raise serializers.ValidationError(
                {"draft_n_accepted": [f"Accepted draft tokens ({accepted}) exceed drafted tokens ({drafted})."]}
            )
        return attrs


class RunInputSerializer(serializers.Serializer):
    """A whole run as POSTed to /api/runs/."""

    uuid = StrictUUIDField()
    rig = StrictCharField(max_length=200)
    status = choice(RunStatus, required=True)
    failure_reason = text(RunModel, "failure_reason")
    started_at = AwareDateTimeField(required=False, allow_null=True)
    finished_at = AwareDateTimeField(required=False, allow_null=True)
    notes = text(RunModel, "notes")
    stack = StackInputSerializer()
    model_file = ModelFileInputSerializer()
    configuration = ConfigurationInputSerializer()
    workload = WorkloadInputSerializer()
    fingerprint = JSONObjectField(required=False, allow_null=True)
    server_log_tail = text(RunModel, "server_log_tail")
    extra = JSONObjectField(required=False, allow_null=True)
    samples = SampleInputSerializer(many=True, required=False, default=list)
    sweep_points = SweepPointInputSerializer(many=True, required=False, default=list)
    concurrency_levels = ConcurrencyLevelInputSerializer(many=True, required=False, default=list)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        errors: dict[str, list[str]] = {}
        started, finished = attrs.get("started_at"), attrs.get("finished_at")
        if started and finished and finished < started:
            errors["finished_at"] = ["finished_at is before started_at."]
        if attrs["status"] == RunStatus.FAILED and not attrs.get("failure_reason"):
            errors["failure_reason"] = ["A failed run needs a failure_reason."]
        if attrs["status"] == RunStatus.FINISHED and not attrs.get("samples"):
            errors["samples"] = ["A finished run needs at least one sample; open it as 'running' to add them later."]
        if errors:
            raise serializers.ValidationError(errors)
        return attrs


class RunAppendInputSerializer(serializers.Serializer):
    """Samples, sweep points and concurrency levels added to an open run."""

    samples = SampleInputSerializer(many=True, required=False, default=list)
    sweep_points = SweepPointInputSerializer(many=True, required=False, default=list)
    concurrency_levels = ConcurrencyLevelInputSerializer(many=True, required=False, default=list)


class RunFinishInputSerializer(RunAppendInputSerializer):
    """The end of an open run, with its last samples."""

    status = serializers.ChoiceField(
        choices=RUN_END_STATUS_CHOICES,
        error_messages={"invalid_choice": '"{input}" is not one of: finished, failed, aborted.'},
    )
    failure_reason = text(RunModel, "failure_reason")
    server_log_tail = text(RunModel, "server_log_tail")
    finished_at = AwareDateTimeField(required=False, allow_null=True, help_text="Default: now.")
    fingerprint = JSONObjectField(required=False, allow_null=True, help_text="Replaces the stored one when given.")
    extra = JSONObjectField(required=False, allow_null=True, help_text="Merged into the stored one, key by key.")

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if attrs["status"] == RunStatus.FAILED and not attrs.get("failure_reason"):
            raise serializers.ValidationError({"failure_reason": ["A failed run needs a failure_reason."]})
        return attrs

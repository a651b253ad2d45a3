"""The run payload of docs/api.md: its one definition.

The service validates POST /api/runs/ (and the append and finish bodies),
``manage.py import_runs`` and llama-bench intake with these models; the runner
checks what it is about to send with the same ones (runners/delivery/payload.py), so a
run the runner spools is a run the service takes. Django-free on purpose: the
rig side imports no Django (pyproject.toml's import contracts).

Bounds reject figures no real rig can produce, which in practice are unit bugs
(tokens per millisecond sent as per second, bytes sent as MiB) or garbage from
a crashed measurement; each bound is a few orders of magnitude above the best
figure published for any hardware, so no honest result is refused. Summary
fields and ``provenance`` are not declared, so a client's values for them are
dropped: the service computes summaries, and everything submitted through the
API is *measured* (reported figures come only from the published importer).

``validated(model, data)`` returns what the service stores: a plain dict in
which a field the client left out is absent (not null) unless it has a default.
Text lengths match the service's columns (tests/results/test_run_schema.py
checks them against the models)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Literal, get_args

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, ValidationInfo, WrapValidator
from pydantic import model_validator as _model_validator
from pydantic_core import InitErrorDetails, PydanticCustomError

from runners.delivery.schema_types import (
    AwareDatetime,
    Boolean,
    FilledText,
    FilledTrimmedText,
    ListOf,
    Number,
    Text,
    TrimmedText,
    UUIDString,
    Whole,
    bounded_json,
    fail,
    field_errors,
    final,
    one_of,
)

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
MAX_WALL_S = MAX_TTFT_MS / 1000
# A stored document (fingerprint, extra) is printed on the run's page: a few KB
# in practice (server_flags, the GPU list); a small body of deeply nested
# brackets would otherwise be a page of hundreds of MB.
MAX_DOCUMENT_DEPTH = 16
MAX_DOCUMENT_BYTES = 256 * 1024

# The service's choices (leaderboard/results/models: Engine, Architecture,
# SpeculativeType, RunStatus), by value.
EngineName = Literal["llama.cpp", "ik_llama.cpp", "vllm", "ollama", "sglang", "beellama", "cloud-api", "other"]
ArchitectureName = Literal["dense", "moe", "hybrid", "unknown"]
SpeculativeName = Literal["none", "draft", "mtp", "dflash", "eagle", "ngram", "unknown"]
StatusName = Literal["running", "finished", "failed", "aborted"]
EndStatusName = Literal["finished", "failed", "aborted"]
ENGINES: tuple[str, ...] = get_args(EngineName)
ARCHITECTURES: tuple[str, ...] = get_args(ArchitectureName)
SPECULATIVE_TYPES: tuple[str, ...] = get_args(SpeculativeName)
STATUSES: tuple[str, ...] = get_args(StatusName)
END_STATUSES: tuple[str, ...] = get_args(EndStatusName)


@dataclass(frozen=True)
class Limits:
    """How many items a payload's lists may hold (the service's settings; these defaults otherwise)."""

    samples: int = 1000
    sweep_points: int = 64
    concurrency_levels: int = 32
    level_requests: int = 1000


def _bounded_unique(limit: str, unique: str) -> WrapValidator:
    """A list of objects at most ``Limits.<limit>`` long whose ``unique`` key does
    not repeat; a repeat is named on the item, together with the items' own errors."""

    def check(value: Any, handler: Any, info: ValidationInfo) -> Any:
        if value is None:
            raise fail("This field may not be null.")
        if not isinstance(value, list):
            raise fail(f'Expected a list of items but got type "{type(value).__name__}".')
        limits = (info.context or {}).get("limits") or Limits()
        longest = getattr(limits, limit)
        if len(value) > longest:
            raise fail(f"Ensure this field has no more than {longest} elements.")
        repeats: list[InitErrorDetails] = []
        seen: dict[int, int] = {}
        for position, item in enumerate(value):
            key = item.get(unique) if isinstance(item, dict) else None
            if not isinstance(key, int) or isinstance(key, bool):
                continue
            if key in seen:
                message = f"Duplicate {unique} {key} (also at position {seen[key]})."
                repeats.append({"type": fail(message), "loc": (position, unique), "input": key})
            else:
                seen[key] = position
        try:
            items = handler(value)
        except ValidationError as exc:
            raise ValidationError.from_exception_data("list", final(exc) + repeats) from None
        if repeats:
            raise ValidationError.from_exception_data("list", repeats)
        return items

    return WrapValidator(check)


def _raise(errors: Mapping[str, str]) -> None:
    """Raise the object-level rule breaks ``errors`` (field → why) as field errors."""
    if errors:
        raise ValidationError.from_exception_data(
            "rules", [{"type": fail(why), "loc": (name,), "input": None} for name, why in errors.items()]
        )


def _drafts(values: BaseModel) -> dict[str, str]:
    drafted, accepted = getattr(values, "draft_n", None), getattr(values, "draft_n_accepted", None)
    if drafted is not None and accepted is not None and accepted > drafted:
        return {"draft_n_accepted": f"Accepted draft tokens ({accepted}) exceed drafted tokens ({drafted})."}
    return {}


class Payload(BaseModel):
    """A part of the payload. Unknown keys are dropped; ``KEEP_DEFAULTS`` are the
    fields whose default counts as given (the rest, left out, stay out)."""

    model_config = ConfigDict(extra="ignore", defer_build=True)
    KEEP_DEFAULTS: ClassVar[tuple[str, ...]] = ()

    def model_post_init(self, context: Any) -> None:
        if self.KEEP_DEFAULTS:
            self.__pydantic_fields_set__.update(self.KEEP_DEFAULTS)


def _optional(**bounds: Any) -> Any:
    """An optional, nullable field (null and absent both allowed) with bounds (min 0 unless said)."""
    bounds.setdefault("ge", 0)
    return Field(default=None, **{k: v for k, v in bounds.items() if v is not None})


class StackInput(Payload):
    engine: Annotated[EngineName, BeforeValidator(one_of(ENGINES))]
    build: Text | None = Field(default=None, max_length=200)
    build_flags: Text | None = Field(default=None, max_length=1000)
    image: Text | None = Field(default=None, max_length=300)


_SHA256 = r"^$|^[0-9a-fA-F]{64}$"


class ModelFileInput(Payload):
    name: FilledText = Field(max_length=300)
    repo: Text | None = Field(default=None, max_length=300)
    architecture: Annotated[ArchitectureName, BeforeValidator(one_of(ARCHITECTURES))] = "unknown"
    total_params_b: Number | None = _optional(le=100_000)
    active_params_b: Number | None = _optional(le=100_000)
    experts_total: Whole | None = _optional(le=1_000_000)
    experts_active: Whole | None = _optional(le=1_000_000)
    layers: Whole | None = _optional(le=100_000)
    quantization: Text | None = Field(default=None, max_length=100)
    weight_format: Text | None = Field(default=None, max_length=100)
    file_size_bytes: Whole | None = _optional(le=10**15)
    # Blank or 64 hex digits; the pattern is restated for the JSON Schema, which a
    # constraint beside a BeforeValidator does not reach.
    sha256: Text | None = Field(default=None, pattern=_SHA256, json_schema_extra={"pattern": _SHA256})

    @_model_validator(mode="after")
    def _rules(self) -> ModelFileInput:
        total, active = self.total_params_b, self.active_params_b
        if total is not None and active is not None and active > total:
            _raise({"active_params_b": "Active parameters exceed total parameters."})
        if self.sha256:
            self.sha256 = self.sha256.lower()
        return self


class ConfigurationInput(Payload):
    ctx_size: Whole | None = _optional(le=MAX_TOKENS)
    cache_type_k: Text | None = Field(default=None, max_length=32)
    cache_type_v: Text | None = Field(default=None, max_length=32)
    batch_size: Whole | None = _optional(le=MAX_TOKENS)
    ubatch_size: Whole | None = _optional(le=MAX_TOKENS)
    parallel: Whole | None = _optional(le=100_000)
    flash_attn: Text | None = Field(default=None, max_length=16)
    # llama.cpp takes -1 (auto) and 999 ("all") for --n-gpu-layers.
    n_gpu_layers: Whole | None = _optional(ge=-1, le=100_000)
    tensor_split: Text | None = Field(default=None, max_length=200)
    tensor_overrides: Text | None = None
    threads: Whole | None = _optional(le=100_000)
    speculative_type: Annotated[SpeculativeName, BeforeValidator(one_of(SPECULATIVE_TYPES))] = "none"
    draft_model: Text | None = Field(default=None, max_length=300)
    draft_n_max: Whole | None = _optional(le=100_000)
    thinking: Boolean | None = None
    temperature: Number | None = _optional(le=100)
    top_k: Whole | None = _optional(ge=-1, le=10_000_000)
    top_p: Number | None = _optional(le=1)
    min_p: Number | None = _optional(le=1)
    extra_args: Annotated[list[Annotated[Text, Field(max_length=500)]], ListOf] | None = Field(
        default=None, max_length=200
    )
    command_line: Text | None = None


class WorkloadInput(Payload):
    KEEP_DEFAULTS = ("version",)

    name: FilledText = Field(max_length=200)
    version: FilledTrimmedText = Field(default="1", max_length=32)
    prompt_sha256: Text | None = Field(default=None, max_length=64)
    max_tokens: Whole | None = _optional(le=MAX_TOKENS)
    repetitions: Whole | None = _optional(le=100_000)
    warmup: Whole | None = _optional(le=100_000)


def _itl(value: Any) -> Any:
    """Inter-token gaps of one stream, ms: as many as a request has tokens. Checked
    in one loop, with one message naming the first bad gap (a run carries tens of
    thousands of them)."""
    if not isinstance(value, list):
        raise fail(f"A list of numbers is required, not {type(value).__name__}.")
    if len(value) > MAX_ITL_GAPS:
        raise fail(f"At most {MAX_ITL_GAPS} gaps.")
    for position, gap in enumerate(value):
        if isinstance(gap, bool) or not isinstance(gap, int | float) or not 0 <= gap <= MAX_TTFT_MS:
            raise fail(f"Item {position}: a gap in ms between 0 and {MAX_TTFT_MS} is required, got {gap!r}.")
    return [float(gap) for gap in value]


ItlGaps = Annotated[
    list[Annotated[float, Field(ge=0, le=MAX_TTFT_MS)]], BeforeValidator(_itl), Field(max_length=MAX_ITL_GAPS)
]
Flags = Annotated[list[Annotated[Text, Field(max_length=500)]], ListOf, Field(max_length=200)]


class SampleInput(Payload):
    index: Whole = Field(ge=1, le=1_000_000)
    decode_tokens_per_s_server: Number | None = _optional(le=MAX_DECODE_TOKENS_PER_S)
    decode_tokens_per_s_client: Number | None = _optional(le=MAX_DECODE_TOKENS_PER_S)
    prefill_tokens_per_s: Number | None = _optional(le=MAX_PREFILL_TOKENS_PER_S)
    ttft_ms: Number | None = _optional(le=MAX_TTFT_MS)
    prompt_tokens: Whole | None = _optional(le=MAX_TOKENS)
    tokens_generated: Whole | None = _optional(le=MAX_TOKENS)
    draft_n: Whole | None = _optional(le=MAX_TOKENS)
    draft_n_accepted: Whole | None = _optional(le=MAX_TOKENS)
    energy_j: Number | None = _optional(le=MAX_ENERGY_J)
    power_w_mean: Number | None = _optional(le=MAX_POWER_W)
    power_w_peak: Number | None = _optional(le=MAX_POWER_W)
    vram_peak_mib: Number | None = _optional(le=MAX_VRAM_MIB)
    stop_reason: Text | None = Field(default=None, max_length=32)
    output_ok: Boolean | None = None
    flags: Flags | None = None
    itl_ms: ItlGaps | None = None

    @_model_validator(mode="after")
    def _rules(self) -> SampleInput:
        _raise(_drafts(self))
        return self


class SweepPointInput(Payload):
    ctx_tokens: Whole = Field(ge=0, le=MAX_TOKENS)
    ctx_label: Text | None = Field(default=None, max_length=32)
    prefill_tokens_per_s: Number | None = _optional(le=MAX_PREFILL_TOKENS_PER_S)
    decode_tokens_per_s: Number | None = _optional(le=MAX_DECODE_TOKENS_PER_S)
    ttft_ms: Number | None = _optional(le=MAX_TTFT_MS)
    power_w: Number | None = _optional(le=MAX_POWER_W)
    energy_j: Number | None = _optional(le=MAX_ENERGY_J)
    tokens_per_kwh: Number | None = _optional(le=MAX_TOKENS_PER_KWH)
    note: Text | None = None


class ConcurrencyRequestInput(Payload):
    index: Whole = Field(ge=1, le=1_000_000)
    stream: Whole = Field(ge=1, le=100_000)
    started_s: Number | None = _optional(le=MAX_WALL_S)
    ended_s: Number | None = _optional(le=MAX_WALL_S)
    ttft_ms: Number | None = _optional(le=MAX_TTFT_MS)
    decode_tokens_per_s_client: Number | None = _optional(le=MAX_DECODE_TOKENS_PER_S)
    decode_tokens_per_s_server: Number | None = _optional(le=MAX_DECODE_TOKENS_PER_S)
    prompt_tokens: Whole | None = _optional(le=MAX_TOKENS)
    tokens_generated: Whole | None = _optional(le=MAX_TOKENS)
    draft_n: Whole | None = _optional(le=MAX_TOKENS)
    draft_n_accepted: Whole | None = _optional(le=MAX_TOKENS)
    itl_ms: ItlGaps | None = None
    error: TrimmedText | None = Field(default=None, max_length=2000)

    @_model_validator(mode="after")
    def _rules(self) -> ConcurrencyRequestInput:
        errors = _drafts(self)
        if self.started_s is not None and self.ended_s is not None and self.ended_s < self.started_s:
            errors["ended_s"] = "ended_s is before started_s."
        _raise(errors)
        return self


class ConcurrencyLevelInput(Payload):
    KEEP_DEFAULTS = ("requests",)

    concurrency: Whole = Field(ge=1, le=100_000)
    n_requests: Whole = Field(ge=1, le=1_000_000)
    wall_s: Number | None = _optional(le=MAX_WALL_S)
    energy_j: Number | None = _optional(le=MAX_ENERGY_J)
    power_w_mean: Number | None = _optional(le=MAX_POWER_W)
    draft_n: Whole | None = _optional(le=MAX_TOKENS)
    draft_n_accepted: Whole | None = _optional(le=MAX_TOKENS)
    note: TrimmedText | None = Field(default=None, max_length=10_000)
    requests: Annotated[list[ConcurrencyRequestInput], _bounded_unique("level_requests", "index")] = Field(
        default_factory=list
    )

    @_model_validator(mode="after")
    def _rules(self) -> ConcurrencyLevelInput:
        if len(self.requests) > self.n_requests:
            _raise({"requests": f"{len(self.requests)} requests, more than n_requests ({self.n_requests})."})
        over = [r.stream for r in self.requests if r.stream > self.concurrency]
        if over:
            _raise({"requests": f"Stream {over[0]} is beyond the level's {self.concurrency} streams."})
        _raise(_drafts(self))
        return self


Samples = Annotated[list[SampleInput], _bounded_unique("samples", "index")]
Document = Annotated[dict[str, Any], bounded_json(max_depth=MAX_DOCUMENT_DEPTH, max_bytes=MAX_DOCUMENT_BYTES)]
SweepPoints = Annotated[list[SweepPointInput], _bounded_unique("sweep_points", "ctx_tokens")]
ConcurrencyLevels = Annotated[list[ConcurrencyLevelInput], _bounded_unique("concurrency_levels", "concurrency")]


class RunAppendInput(Payload):
    """Samples, sweep points and concurrency levels added to an open run."""

    KEEP_DEFAULTS = ("samples", "sweep_points", "concurrency_levels")

    samples: Samples = Field(default_factory=list)
    sweep_points: SweepPoints = Field(default_factory=list)
    concurrency_levels: ConcurrencyLevels = Field(default_factory=list)


class RunFinishInput(RunAppendInput):
    """The end of an open run, with its last samples."""

    status: Annotated[EndStatusName, BeforeValidator(one_of(END_STATUSES))]
    failure_reason: Text | None = None
    server_log_tail: Text | None = None
    finished_at: AwareDatetime | None = Field(default=None, description="Default: now.")
    fingerprint: Document | None = Field(default=None, description="Replaces the stored one when given.")
    extra: Document | None = Field(default=None, description="Merged into the stored one, key by key.")

    @_model_validator(mode="after")
    def _rules(self) -> RunFinishInput:
        if self.status == "failed" and not self.failure_reason:
            _raise({"failure_reason": "A failed run needs a failure_reason."})
        return self


class RunCreateInput(Payload):
    """A whole run as POSTed to /api/runs/."""

    KEEP_DEFAULTS = ("samples", "sweep_points", "concurrency_levels")

    uuid: UUIDString
    rig: FilledTrimmedText = Field(max_length=200)
    status: Annotated[StatusName, BeforeValidator(one_of(STATUSES))]
    failure_reason: Text | None = None
    started_at: AwareDatetime | None = None
    finished_at: AwareDatetime | None = None
    notes: Text | None = None
    stack: StackInput
    model_file: ModelFileInput
    configuration: ConfigurationInput
    workload: WorkloadInput
    fingerprint: Document | None = None
    server_log_tail: Text | None = None
    extra: Document | None = None
    # As in RunAppendInput, declared here to keep the fields (and errors) in the document's order.
    samples: Samples = Field(default_factory=list)
    sweep_points: SweepPoints = Field(default_factory=list)
    concurrency_levels: ConcurrencyLevels = Field(default_factory=list)

    @_model_validator(mode="after")
    def _rules(self) -> RunCreateInput:
        errors = {}
        if self.started_at and self.finished_at and self.finished_at < self.started_at:
            errors["finished_at"] = "finished_at is before started_at."
        if self.status == "failed" and not self.failure_reason:
            errors["failure_reason"] = "A failed run needs a failure_reason."
        if self.status == "finished" and not self.samples:
            errors["samples"] = "A finished run needs at least one sample; open it as 'running' to add them later."
        _raise(errors)
        return self


def validated(model: type[Payload], data: Any, *, limits: Limits | None = None) -> dict[str, Any]:
    """Return ``data`` checked against ``model`` as a plain dict (fields left out
    stay out, unless they have a default); raise pydantic's ValidationError,
    which ``runners.delivery.schema_types.field_errors`` words field by field."""
    if not isinstance(data, dict):
        raise ValidationError.from_exception_data(
            model.__name__,
            [{"type": PydanticCustomError("rigboard", _not_an_object(data)), "loc": (), "input": data}],
        )
    checked = model.model_validate(data, context={"limits": limits or Limits()})
    return checked.model_dump(exclude_unset=True)


def _not_an_object(data: Any) -> str:
    return f"Invalid data. Expected a dictionary, but got {type(data).__name__}."


def payload_problems(payload: Any, *, limits: Limits | None = None) -> dict[str, list[str]]:
    """Return what the service would refuse in the run ``payload`` the runner built
    (``{"samples.3.ttft_ms": ["why"]}``), {} when it would take it."""
    try:
        validated(RunCreateInput, payload, limits=limits)
    except ValidationError as exc:
        return field_errors(exc)
    return {}

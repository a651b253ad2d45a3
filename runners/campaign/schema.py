"""The campaigns API's payloads (docs/api.md, "Campaigns"): their one definition.

``CampaignSpecInput`` is a campaign's definition, as the rig reads it from
``campaign.toml`` (``CampaignSpec.from_mapping``) and as ``POST /api/campaigns/``
takes it (``CampaignCreateInput``, with the rig and its base config);
``TrialInput`` is a trial record (``TrialResult.payload()`` on the rig, ``POST
/api/campaigns/<id>/trials/`` and ``manage.py import_campaign`` on the service);
``CampaignFinishInput`` and ``CampaignCancelInput`` close a campaign. The service
checks every body with these models and its OpenAPI schema is generated from
them (``results/api/payloads.PayloadExtension``), as for runs
(``runners/delivery/schema.py``).

Numbers are finite JSON numbers within the ranges below, text has no NUL or
lone surrogate, and every list, object and string has a bound: the ranges are
orders of magnitude beyond any real campaign, so what they refuse is a bug or
an attack, never a result. What a body's values mean together (a trial's
``params`` are a point of its campaign's space) is checked by the service."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Annotated, Any, Literal, get_args

from pydantic import BeforeValidator, ConfigDict, Field, ValidationError, WithJsonSchema
from pydantic import model_validator as _model_validator
from pydantic_core import InitErrorDetails, PydanticCustomError

from runners.campaign.figures import PER_REPETITION
from runners.delivery.schema import MAX_TOKENS, MAX_TOKENS_PER_KWH, Payload
from runners.delivery.schema_types import (
    Boolean,
    FilledTrimmedText,
    Number,
    Text,
    UUIDString,
    Whole,
    bounded_json,
    check_text,
    fail,
    field_errors,
    json_type,
    one_of,
)

# llama-server flags a campaign may vary, and the value type each takes. ``model``
# is the model file itself, so quantizations of one model compete.
PARAMETERS: dict[str, type] = {
    "model": str,
    "n_gpu_layers": int,
    "threads": int,
    "batch_size": int,
    "ubatch_size": int,
    "cache_type_k": str,
    "cache_type_v": str,
    "flash_attn": str,
    "tensor_overrides": str,
    "spec_type": str,
    "draft_n_max": int,
    "ctx_size": int,
}
# Objective metric -> direction. Each is a mean over the trial's repetitions.
OBJECTIVES = {
    "decode_tokens_per_s": "maximize",
    "prefill_tokens_per_s": "maximize",
    "tokens_per_kwh": "maximize",
    "ttft_ms": "minimize",
}
# What a constraint may bound: the objectives, peak VRAM, perplexity (relative to
# the best model file's, in percent) and the output check (the fraction passing).
CONSTRAINT_METRICS = (*OBJECTIVES, "vram_peak_mib", "perplexity_margin_pct", "output_ok_fraction")
StrategyName = Literal["grid", "random", "adaptive"]
STRATEGIES: tuple[str, ...] = get_args(StrategyName)
ObjectiveName = Literal["decode_tokens_per_s", "prefill_tokens_per_s", "tokens_per_kwh", "ttft_ms"]
ConstraintMetricName = Literal[
    "decode_tokens_per_s",
    "prefill_tokens_per_s",
    "tokens_per_kwh",
    "ttft_ms",
    "vram_peak_mib",
    "perplexity_margin_pct",
    "output_ok_fraction",
]
TrialStateName = Literal["complete", "failed", "infeasible", "aborted"]
TRIAL_STATES: tuple[str, ...] = get_args(TrialStateName)
TrialRoleName = Literal["search", "confirmation"]
TRIAL_ROLES: tuple[str, ...] = get_args(TrialRoleName)
FinishStatusName = Literal["finished", "cancelled", "failed"]
FINISH_STATUSES: tuple[str, ...] = get_args(FinishStatusName)

MAX_GRID_SIZE = 100_000  # points of a grid search
MAX_RANGE_VALUES = 10_000  # values of one {min, max, step} range
MAX_PARAMETER_VALUE = MAX_TOKENS  # an integer parameter: ctx_size is the largest (~10M tokens today)
MAX_VALUE_CHARS = 500  # a text parameter: a model path, a tensor-override pattern
MAX_CONSTRAINTS = 32
MAX_CONSTRAINT_BOUND = 1e15  # beyond every metric's range (tokens per kWh reach ~1e9)
MAX_BUDGET_TRIALS = MAX_GRID_SIZE
MAX_WALL_TIME_S = 90 * 24 * 3600  # a campaign of a season
MAX_REPETITIONS = 1000
MAX_SEED = 2**32 - 1
MAX_TRIAL_NUMBER = 1_000_000
MAX_TRIAL_S = 7 * 24 * 3600  # one trial: a week is a hung rig
MAX_OBJECTIVE = MAX_TOKENS_PER_KWH  # the largest objective's bound (runners/delivery/schema.py)
MAX_METRICS = 64
MAX_METRIC = 1e15
MAX_METRIC_NAME_CHARS = 100
MAX_METRIC_TEXT_CHARS = 1000
MAX_FAILURE_KIND_CHARS = 32  # the service's column
MAX_FAILURE_REASON_CHARS = 4000
MAX_LOG_TAIL_CHARS = 20_000
MAX_STATUS_REASON_CHARS = 2000
MAX_NAME_CHARS = 200  # the service's column
MAX_RIG_CONFIG_BYTES = 64 * 1024
MAX_RIG_CONFIG_DEPTH = 8


class Strict(Payload):
    """A part of a campaign's definition: an unknown key is an error (a typo in
    ``campaign.toml`` would otherwise be a silently different campaign)."""

    model_config = ConfigDict(extra="forbid", defer_build=True)


def _errors(errors: list[InitErrorDetails]) -> None:
    if errors:
        raise ValidationError.from_exception_data("space", errors)


def _error(loc: tuple[str | int, ...], message: str) -> InitErrorDetails:
    return {"type": fail(message), "loc": loc, "input": None}


def _whole_in_range(value: Any, loc: tuple[str | int, ...]) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        _errors([_error(loc, f"An integer is required, not {json_type(value)}.")])
    if not -1 <= value <= MAX_PARAMETER_VALUE:
        _errors([_error(loc, f"Ensure this value is between -1 and {MAX_PARAMETER_VALUE}.")])
    return int(value)


def _range(name: str, raw: Mapping[str, Any]) -> list[int]:
    unknown = [key for key in raw if key not in ("min", "max", "step")]
    if unknown:
        _errors([_error((name, str(unknown[0])), "Unknown field of a range (known: min, max, step).")])
    for key in ("min", "max"):
        if key not in raw:
            _errors([_error((name, key), "This field is required.")])
    low = _whole_in_range(raw["min"], (name, "min"))
    high = _whole_in_range(raw["max"], (name, "max"))
    step = _whole_in_range(raw.get("step", 1), (name, "step"))
    if step == 0:
        _errors([_error((name, "step"), "Must not be 0.")])
    if (high - low) * step < 0:
        _errors([_error((name, "step"), f"Goes away from max ({low} → {high} by {step}).")])
    if abs(high - low) // abs(step) >= MAX_RANGE_VALUES:
        _errors([_error((name,), f"More than {MAX_RANGE_VALUES} values.")])
    return list(range(low, high + (1 if step > 0 else -1), step))


def _space(raw: Any) -> dict[str, list[Any]]:
    """Each parameter a list of values of its type, or an integer range {min, max, step}."""
    if not isinstance(raw, dict) or not raw:
        raise fail("Required: an object of parameter -> list of values or {min, max, step}.")
    space: dict[str, list[Any]] = {}
    for name, values in raw.items():
        kind = PARAMETERS.get(name)
        if kind is None:
            _errors([_error((name,), f"Unknown parameter (known: {', '.join(sorted(PARAMETERS))}).")])
        if isinstance(values, dict):
            values = _range(name, values)
        if not isinstance(values, list):
            _errors([_error((name,), "A list of values or a range {min, max, step} is required.")])
        if not values:
            _errors([_error((name,), "The list of values is empty.")])
        if len(values) > MAX_RANGE_VALUES:
            _errors([_error((name,), f"More than {MAX_RANGE_VALUES} values.")])
        for i, value in enumerate(values):
            if kind is int:
                _whole_in_range(value, (name, i))
            elif not isinstance(value, str):
                _errors([_error((name, i), f"A string is required, not {json_type(value)}.")])
            else:
                try:
                    check_text(value)
                except PydanticCustomError as exc:
                    _errors([_error((name, i), exc.message())])
                if len(value) > MAX_VALUE_CHARS:
                    _errors([_error((name, i), f"Ensure this field has no more than {MAX_VALUE_CHARS} characters.")])
        if len(set(values)) != len(values):
            _errors([_error((name,), "A value is listed twice.")])
        space[name] = list(values)
    return space


def _values_schema(kind: type) -> dict[str, Any]:
    item = (
        {"type": "integer", "minimum": -1, "maximum": MAX_PARAMETER_VALUE}
        if kind is int
        else {"type": "string", "maxLength": MAX_VALUE_CHARS}
    )
    values = {"type": "array", "items": item, "minItems": 1, "maxItems": MAX_RANGE_VALUES, "uniqueItems": True}
    if kind is not int:
        return values
    bound = {"type": "integer", "minimum": -1, "maximum": MAX_PARAMETER_VALUE}
    steps = {"type": "object", "properties": {"min": bound, "max": bound, "step": bound}, "required": ["min", "max"]}
    return {"anyOf": [values, {**steps, "additionalProperties": False}]}


# OpenAPI 3.0 has no propertyNames: the known parameters are listed as properties.
_SPACE_SCHEMA = {
    "type": "object",
    "minProperties": 1,
    "properties": {name: _values_schema(kind) for name, kind in PARAMETERS.items()},
    "additionalProperties": False,
}
Space = Annotated[dict[str, list[int | str]], BeforeValidator(_space), WithJsonSchema(_SPACE_SCHEMA, mode="validation")]


class ConstraintInput(Strict):
    """A bound on one metric of every trial: ``max`` and/or ``min``."""

    metric: Annotated[ConstraintMetricName, BeforeValidator(one_of(CONSTRAINT_METRICS))]
    max: Number | None = Field(default=None, ge=-MAX_CONSTRAINT_BOUND, le=MAX_CONSTRAINT_BOUND)
    min: Number | None = Field(default=None, ge=-MAX_CONSTRAINT_BOUND, le=MAX_CONSTRAINT_BOUND)

    @_model_validator(mode="after")
    def _rules(self) -> ConstraintInput:
        if self.max is None and self.min is None:
            raise ValidationError.from_exception_data("constraint", [_error((), "Give max and/or min.")])
        return self


class BudgetInput(Strict):
    """When the search stops (null or absent: the grid's size, no time limit)."""

    trials: Whole | None = Field(default=None, ge=1, le=MAX_BUDGET_TRIALS)
    wall_time_s: Number | None = Field(default=None, gt=0, le=MAX_WALL_TIME_S)


def _confirm_repetitions(value: Any) -> Any:
    if value == 1:
        raise fail("Must be at least 2 (a confidence interval needs two), or 0: none.")
    return value


class CampaignSpecInput(Strict):
    """A campaign's definition: ``campaign.toml`` on the rig, the body of ``POST /api/campaigns/``."""

    name: FilledTrimmedText = Field(max_length=MAX_NAME_CHARS, description="A short name for the campaign.")
    space: Space = Field(description="Each parameter a list of values or an integer range {min, max, step}.")
    strategy: Annotated[StrategyName, BeforeValidator(one_of(STRATEGIES))] = "adaptive"
    objective: Annotated[ObjectiveName, BeforeValidator(one_of(OBJECTIVES))] = "decode_tokens_per_s"
    constraints: list[ConstraintInput] = Field(default_factory=list, max_length=MAX_CONSTRAINTS)
    budget: BudgetInput = Field(default_factory=BudgetInput)
    repetitions: Whole = Field(default=2, ge=1, le=MAX_REPETITIONS)
    seed: Whole = Field(default=0, ge=0, le=MAX_SEED)
    confirm_repetitions: Annotated[Whole, BeforeValidator(_confirm_repetitions)] = Field(
        default=10,
        ge=0,
        le=MAX_REPETITIONS,
        description="Repetitions of the best trial's confirmation run (at least 2; 0: none).",
    )

    @_model_validator(mode="after")
    def _rules(self) -> CampaignSpecInput:
        if self.strategy == "grid":
            size = 1
            for values in self.space.values():
                size *= len(values)
            if size > MAX_GRID_SIZE:
                raise ValidationError.from_exception_data(
                    "spec", [_error(("space",), f"The grid has {size} points; at most {MAX_GRID_SIZE}.")]
                )
        return self


RigConfigDocument = Annotated[
    dict[str, Any], bounded_json(max_depth=MAX_RIG_CONFIG_DEPTH, max_bytes=MAX_RIG_CONFIG_BYTES)
]


class CampaignCreateInput(CampaignSpecInput):
    """``POST /api/campaigns/``: the definition, on which rig, from which base config."""

    rig: Text | None = Field(
        default=None, max_length=200, description="Staff: the rig; a rig's token opens one for its own rig."
    )
    base_config: RigConfigDocument | None = Field(
        default=None, description="The rig config; its [server] is every trial's base."
    )
    origin: Text | None = Field(default=None, max_length=16, description="Ignored: the service decides.")


def _keys(value: Any, *, what: str, most: int) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise fail(f"An object of {what} -> value is required.")
    if len(value) > most:
        raise fail(f"At most {most} {what}s.")
    for key in value:
        try:
            check_text(key)
        except PydanticCustomError as exc:
            raise fail(f"The {what} name {key!r}: {exc.message()}") from None
        if not key or len(key) > MAX_METRIC_NAME_CHARS:
            raise fail(f"A {what} name has 1 to {MAX_METRIC_NAME_CHARS} characters.")
    return value


def _param_value(value: Any) -> Any:
    if isinstance(value, str):
        check_text(value)
        if len(value) > MAX_VALUE_CHARS:
            raise fail(f"Ensure this field has no more than {MAX_VALUE_CHARS} characters.")
        return value
    if isinstance(value, bool) or not isinstance(value, int) or not -1 <= value <= MAX_PARAMETER_VALUE:
        raise fail(f"An integer between -1 and {MAX_PARAMETER_VALUE}, or a string, is required.")
    return value


def _metric_value(value: Any) -> Any:
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str):
        check_text(value)
        if len(value) > MAX_METRIC_TEXT_CHARS:
            raise fail(f"Ensure this field has no more than {MAX_METRIC_TEXT_CHARS} characters.")
        return value
    if not isinstance(value, int | float):
        raise fail(f"A number, a boolean, a string or null is required, not {json_type(value)}.")
    if (isinstance(value, float) and not math.isfinite(value)) or abs(value) > MAX_METRIC:
        raise fail(f"Ensure this value is between {-MAX_METRIC:g} and {MAX_METRIC:g}.")
    return value


def _no_uuid(value: Any) -> Any:
    return None if value == "" else value  # older rigs and campaign files send "" for "no run"


ParamValue = Annotated[int | str, BeforeValidator(_param_value)]
MetricValue = Annotated[float | bool | str | None, BeforeValidator(_metric_value)]
Params = Annotated[dict[str, ParamValue], BeforeValidator(lambda v: _keys(v, what="parameter", most=len(PARAMETERS)))]
Metrics = Annotated[dict[str, MetricValue], BeforeValidator(lambda v: _keys(v, what="metric", most=MAX_METRICS))]
Objective = Annotated[Number, Field(ge=0, le=MAX_OBJECTIVE)]
# The metrics a trial keeps per repetition (figures.PER_REPETITION; tests/campaigns/test_schema.py checks they agree).
RepetitionMetric = Annotated[str, BeforeValidator(one_of(PER_REPETITION))]
Seconds = Annotated[Number, Field(ge=0, le=MAX_TRIAL_S)]


class TrialInput(Payload):
    """``POST /api/campaigns/<id>/trials/``: one trial, as ``TrialResult.payload()`` builds it."""

    number: Whole = Field(ge=1, le=MAX_TRIAL_NUMBER)
    state: Annotated[TrialStateName, BeforeValidator(one_of(TRIAL_STATES))]
    params: Params
    value: Objective | None = Field(default=None, description="The campaign's objective (mean over repetitions).")
    metrics: Metrics = Field(default_factory=dict)
    samples: list[Objective | None] = Field(
        default_factory=list, max_length=MAX_REPETITIONS, description="The objective per repetition."
    )
    repetitions: dict[RepetitionMetric, Annotated[list[Number | None], Field(max_length=MAX_REPETITIONS)]] = Field(
        default_factory=dict,
        description="Each metric's value per repetition, from the trial's run (runners/campaign/figures.py).",
    )
    run_uuid: Annotated[UUIDString | None, BeforeValidator(_no_uuid)] = None
    failure_kind: Text = Field(default="", max_length=MAX_FAILURE_KIND_CHARS)
    failure_reason: Text = Field(default="", max_length=MAX_FAILURE_REASON_CHARS)
    log_tail: Text = Field(default="", max_length=MAX_LOG_TAIL_CHARS)
    pruned: Boolean = False
    role: Annotated[TrialRoleName, BeforeValidator(one_of(TRIAL_ROLES))] = "search"
    duration_s: Seconds | None = Field(default=None, description="The whole trial: start, load, measuring, delivery.")
    measured_s: Seconds | None = Field(default=None, description="The requests themselves.")

    @_model_validator(mode="after")
    def _rules(self) -> TrialInput:
        if self.state == "complete" and self.value is None:
            raise ValidationError.from_exception_data("trial", [_error(("value",), "A complete trial has a value.")])
        return self


class CampaignFinishInput(Payload):
    """``POST /api/campaigns/<id>/finish/``: how the campaign ended."""

    status: Annotated[FinishStatusName, BeforeValidator(one_of(FINISH_STATUSES))]
    reason: Text = Field(default="", max_length=MAX_STATUS_REASON_CHARS)


class CampaignCancelInput(Payload):
    """``POST /api/campaigns/<id>/cancel/``: stop a campaign (its queued trials are cancelled)."""

    reason: Text = Field(default="", max_length=MAX_STATUS_REASON_CHARS)


def trial_problems(payload: Any) -> dict[str, list[str]]:
    """Return what the service would refuse in the trial record ``payload`` the rig built
    (``{"metrics.x": ["why"]}``), {} when it would take it."""
    try:
        TrialInput.model_validate(payload)
    except ValidationError as exc:
        return field_errors(exc)
    return {}

"""Run payloads checked against their one definition (runners/delivery/schema.py) and
answered in the API's error shape; also how the OpenAPI schema describes them.

The schema is pydantic's JSON Schema of the same models, written as OpenAPI
3.0 (``nullable`` rather than a ``null`` type), so the documented request
bodies cannot drift from what the API accepts."""

from __future__ import annotations

from typing import Any, TypeVar

from django.conf import settings
from drf_spectacular.extensions import OpenApiSerializerExtension
from drf_spectacular.plumbing import ResolvedComponent, build_choice_field
from pydantic import ValidationError
from rest_framework import exceptions, serializers

from leaderboard.results.models import Architecture, Engine, RunStatus, SpeculativeType
from runners.delivery import schema
from runners.delivery.schema_types import field_errors


def limits() -> schema.Limits:
    """Return the list limits in force (settings read per call: tests override them)."""
    return schema.Limits(
        samples=settings.RIGBOARD_MAX_SAMPLES,
        sweep_points=settings.RIGBOARD_MAX_SWEEP_POINTS,
        concurrency_levels=settings.RIGBOARD_MAX_CONCURRENCY_LEVELS,
        level_requests=settings.RIGBOARD_MAX_LEVEL_REQUESTS,
    )


def payload_checked(model: type[schema.Payload], data: Any) -> tuple[dict[str, Any] | None, dict[str, list[str]]]:
    """Return ``(validated data, {})`` for a valid ``data``, ``(None, {"field.path": ["why"]})`` otherwise."""
    try:
        return schema.validated(model, data, limits=limits()), {}
    except ValidationError as exc:
        return None, field_errors(exc)


def payload_validated(model: type[schema.Payload], data: Any) -> dict[str, Any]:
    """Return ``data`` validated against ``model``; raise a 400 naming each bad field."""
    validated, errors = payload_checked(model, data)
    if validated is None:
        raise exceptions.ValidationError(errors)  # type: ignore[arg-type]  # flat paths, as flatten_errors writes them
    return validated


P = TypeVar("P", bound=schema.Payload)


def payload_model(model: type[P], data: Any) -> P:
    """Return ``data`` as an instance of ``model`` (a payload definition from runners/);
    raise a 400 naming each bad field."""
    if not isinstance(data, dict):
        raise exceptions.ValidationError(
            {"body": [f"Invalid data. Expected a dictionary, but got {type(data).__name__}."]}
        )
    try:
        return model.model_validate(data, context={"limits": limits()})
    except ValidationError as exc:
        raise exceptions.ValidationError(field_errors(exc)) from None  # type: ignore[arg-type]  # flat paths


# The statuses a run can end with (POST /api/runs/{uuid}/finish/), named RunEndStatusEnum in the schema.
RUN_END_STATUS_CHOICES = [c for c in RunStatus.choices if c[0] in schema.END_STATUSES]
# The schema's enums as drf-spectacular writes a model's choices (labels in the
# description), so a request's enum and an answer's are one component.
_CHOICES = {
    tuple(value for value, _ in choices): choices
    for choices in (
        Engine.choices,
        Architecture.choices,
        SpeculativeType.choices,
        RunStatus.choices,
        RUN_END_STATUS_CHOICES,
    )
}
# Bounds set beside a BeforeValidator reach the JSON Schema under their pydantic names.
_KEYWORDS: dict[str, str] = {"ge": "minimum", "le": "maximum"}


def openapi(node: Any) -> Any:
    """Return pydantic's JSON Schema ``node`` as OpenAPI 3.0: ``anyOf [X, null]`` becomes
    X with ``nullable``, numbers get DRF's ``format: double``, titles and null defaults go."""
    if isinstance(node, list):
        return [openapi(item) for item in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {
        _KEYWORDS.get(str(k), str(k)): openapi(v)
        for k, v in node.items()
        if k != "title" and not (k == "default" and v is None)
    }
    options = out.get("anyOf")
    if isinstance(options, list) and {"type": "null"} in options:
        rest = [o for o in options if o != {"type": "null"}]
        del out["anyOf"]
        if len(rest) == 1 and "$ref" not in rest[0]:
            out = {**rest[0], **out}
        else:
            out["anyOf" if len(rest) > 1 else "allOf"] = rest
        out["nullable"] = True
    if out.get("type") == "number":
        out.setdefault("format", "double")
    if out.get("type") == "integer" and out.get("maximum", 0) > 2**31 - 1:
        out.setdefault("format", "int64")
    choices = _CHOICES.get(tuple(out.get("enum", ())))
    if choices is not None:
        # A choice's default is the model's, not part of the request's description.
        out = {**build_choice_field(serializers.ChoiceField(choices=choices)), **out}
        out.pop("default", None)
    return out


class PayloadExtension(OpenApiSerializerExtension):
    """drf-spectacular reads the payload models (``extend_schema(request=RunCreateInput)``)."""

    target_class = "runners.delivery.schema.Payload"
    match_subclasses = True
    priority = 1  # over drf-spectacular's own pydantic extension (serialization mode, OpenAPI 3.1 nulls)

    def get_name(self, auto_schema: Any, direction: Any) -> str:
        return str(self.target.__name__)

    def map_serializer(self, auto_schema: Any, direction: Any) -> Any:
        document = self.target.model_json_schema(ref_template="#/components/schemas/{model}", mode="validation")
        for name, sub_schema in document.pop("$defs", {}).items():
            component = ResolvedComponent(
                name=name, type=ResolvedComponent.SCHEMA, object=name, schema=openapi(sub_schema)
            )
            auto_schema.registry.register_on_missing(component)
        return openapi(document)

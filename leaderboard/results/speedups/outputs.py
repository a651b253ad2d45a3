"""Output serializers compiled into plain functions: the same dict as
``Serializer.to_representation``, in about a third of the time.

DRF represents each field of each object through generic machinery (field
iteration, ``get_attribute`` with its exception handling, a per-field
``to_representation``): ≈ 2 ms of CPU for a run's detail with its 18 samples and
sweep points. Here a serializer is compiled once per process into a table of
(key, getter, converter). Only the common, simple cases get their own getter
and converter: model fields read as plain attributes, and floats, integers,
text, booleans, UUIDs, JSON, choices and ISO 8601 date-times. Every other field
(method fields, related slugs, callables, fields that may be skipped) goes
through DRF's own ``get_attribute``/``to_representation``, so its result is
DRF's by construction. tests/results/test_compiled_outputs.py checks the two
agree on real runs.
"""

from __future__ import annotations

import datetime
import functools
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.db import models
from django.utils import timezone
from rest_framework import ISO_8601, serializers
from rest_framework.fields import SkipField, empty
from rest_framework.relations import PKOnlyObject
from rest_framework.settings import api_settings

Represent = Callable[[Any], Any]
_SKIP = object()


def _utc_iso(value: datetime.datetime | str) -> str:
    if isinstance(value, str):
        return value
    text = value.astimezone(datetime.UTC).isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text


def _converter(field: serializers.Field) -> Represent:
    """Return the field's to_representation, or a faster equivalent for plain field kinds."""
    kind = type(field)
    if kind is serializers.FloatField:
        return float
    if kind is serializers.IntegerField:
        return int
    if kind is serializers.CharField:
        return str
    if kind is serializers.BooleanField:
        return field.to_representation
    if kind is serializers.UUIDField and field.uuid_format == "hex_verbose":  # type: ignore[attr-defined]
        return str
    if kind is serializers.JSONField and not field.binary:  # type: ignore[attr-defined]
        return lambda value: value
    if kind is serializers.ChoiceField:
        choices = field.choice_strings_to_values  # type: ignore[attr-defined]
        return lambda value: value if value == "" else choices.get(str(value), value)
    if (
        kind is serializers.DateTimeField
        and getattr(field, "format", api_settings.DATETIME_FORMAT) == ISO_8601
        and not hasattr(field, "timezone")  # no per-field zone: the current one, UTC here
        and settings.USE_TZ
        and settings.TIME_ZONE == "UTC"
    ):
        fallback = field.to_representation
        return lambda value: _utc_iso(value) if isinstance(value, str) or timezone.is_aware(value) else fallback(value)
    return field.to_representation


def _model_attribute(parent: serializers.Serializer, field: serializers.Field) -> str | None:
    """Return the attribute name when ``field`` reads a concrete model field
    straight off the instance (no dotted source, no callable); None otherwise."""
    model = getattr(getattr(parent, "Meta", None), "model", None)
    source = field.source
    if model is None or not isinstance(source, str) or source == "*" or "." in source:
        return None
    try:
        model_field = model._meta.get_field(source)
    except Exception:  # noqa: BLE001 - FieldDoesNotExist: a property, method or annotation
        return None
    if not getattr(model_field, "concrete", False) or model_field.is_relation:
        return None
    return str(model_field.attname)


def _generic_getter(field: serializers.Field) -> Represent:
    def get(instance: Any) -> Any:
        try:
            return field.get_attribute(instance)
        except SkipField:
            return _SKIP

    return get


def _nested(field: serializers.Field) -> Represent:
    if isinstance(field, serializers.ListSerializer):
        child = _compile(field.child)  # type: ignore[arg-type]

        def represent_list(data: Any) -> list[Any]:
            items = data.all() if isinstance(data, models.manager.BaseManager) else data
            return [child(item) for item in items]

        return represent_list
    return _compile(field)  # type: ignore[arg-type]


def _plan_item(parent: serializers.Serializer, name: str, field: serializers.Field) -> tuple[str, Represent, Represent]:
    if isinstance(field, serializers.BaseSerializer):
        return name, _generic_getter(field), _nested(field)
    attribute = _model_attribute(parent, field)
    simple = attribute is not None and field.default is empty
    getter = (lambda instance, a=attribute: getattr(instance, a)) if simple else _generic_getter(field)
    return name, getter, _converter(field)


def _compile(serializer: serializers.Serializer) -> Represent:
    plan = [_plan_item(serializer, name, field) for name, field in serializer.fields.items() if not field.write_only]

    def represent(instance: Any) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, get, convert in plan:
            value = get(instance)
            if value is _SKIP:
                continue
            check = value.pk if isinstance(value, PKOnlyObject) else value
            out[name] = None if check is None else convert(value)
        return out

    return represent


@functools.cache
def compiled(serializer_class: type[serializers.Serializer]) -> Represent:
    """Return a function doing ``serializer_class().to_representation``; built once per class."""
    return _compile(serializer_class())

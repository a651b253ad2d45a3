"""Number fields for a JSON API: a number must be a JSON number.

DRF's FloatField / IntegerField accept ``"12.5"`` and ``true``; a runner that
sends a string where a figure belongs has a bug we want to see, so both are
rejected here with the field named."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from runners.delivery.schema_types import json_type


def _reject_non_numbers(field: serializers.Field, data: Any) -> None:
    if isinstance(data, bool) or not isinstance(data, (int, float)):
        raise serializers.ValidationError(f"A number is required, not {json_type(data)}.")


class NumberField(serializers.FloatField):
    def to_internal_value(self, data: Any) -> float:
        _reject_non_numbers(self, data)
        return super().to_internal_value(data)


class WholeNumberField(serializers.IntegerField):
    def to_internal_value(self, data: Any) -> int:
        _reject_non_numbers(self, data)
        if isinstance(data, float) and not data.is_integer():
            raise serializers.ValidationError("A whole number is required.")
        return super().to_internal_value(int(data))


def number(*, min_value: float | None = 0, max_value: float | None = None, required: bool = False) -> NumberField:
    """An optional, nullable metric with bounds."""
    bounds: dict[str, Any] = {k: v for k, v in (("min_value", min_value), ("max_value", max_value)) if v is not None}
    return NumberField(required=required, allow_null=not required, **bounds)


def whole(*, min_value: int | None = 0, max_value: int | None = None, required: bool = False) -> WholeNumberField:
    bounds: dict[str, Any] = {k: v for k, v in (("min_value", min_value), ("max_value", max_value)) if v is not None}
    return WholeNumberField(required=required, allow_null=not required, **bounds)


# Strict text (docs/api.md, "Types"): DRF's own CharField coerces ``123`` to "123",
# so a runner's type bug would be stored as something else.


def _reject_non_strings(data: Any, *, what: str) -> None:
    if not isinstance(data, str):
        raise serializers.ValidationError(f"{what} is required, not {json_type(data)}.")


class StrictCharField(serializers.CharField):
    """Text that must be a JSON string: DRF's CharField turns 123 into "123"."""

    def to_internal_value(self, data: Any) -> str:
        _reject_non_strings(data, what="A string")
        return super().to_internal_value(data)

"""Number fields for a JSON API: a number must be a JSON number.

DRF's FloatField / IntegerField accept ``"12.5"`` and ``true``; a runner that
sends a string where a figure belongs has a bug we want to see, so both are
rejected here with the field named."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers


def _reject_non_numbers(field: serializers.Field, data: Any) -> None:
    if isinstance(data, bool) or not isinstance(data, (int, float)):
        raise serializers.ValidationError(
            f"A number is required, not {type(data).__name__ if data is not None else 'null'}."
        )


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

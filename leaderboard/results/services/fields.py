"""Validated input dicts as model field values: the one place that fills in
what a payload left out ('' for text, None otherwise, or the field's default),
so natural-key lookups match and rows are built the same way everywhere."""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

from django.db import models

from leaderboard.results.models import Run, Sample, SweepPoint


@functools.cache
def _blank_plan(model: type[models.Model], exclude: tuple[str, ...]) -> tuple[tuple[str, Any, bool, Any], ...]:
    """(name, field, has_default, blank) for each concrete non-primary-key field of ``model``."""
    plan = []
    for field in model._meta.concrete_fields:
        if field.primary_key or field.name in exclude:
            continue
        blank = "" if field.empty_strings_allowed and not field.null else None
        plan.append((field.name, field, field.has_default(), blank))
    return tuple(plan)


def blank_fields(data: Mapping[str, Any], model: type, exclude: Sequence[str] = ()) -> dict[str, Any]:
    """Return ``data`` restricted to ``model``'s concrete fields, with '' for missing text fields
    and None for other missing ones, so natural-key lookups match."""
    out: dict[str, Any] = {}
    for name, field, has_default, blank in _blank_plan(model, tuple(exclude)):
        value = data.get(name)
        if value is not None:
            out[name] = value
        elif has_default:
            out[name] = field.get_default()
        else:
            out[name] = blank
    return out


def sample_objects(run: Run, samples: Sequence[Mapping[str, Any]]) -> list[Sample]:
    objs = []
    for position, data in enumerate(samples, start=1):
        fields = blank_fields(data, Sample, exclude=["run"])
        if fields.get("index") is None:
            fields["index"] = position
        objs.append(Sample(run=run, **fields))
    return objs


def sweep_objects(run: Run, points: Sequence[Mapping[str, Any]]) -> list[SweepPoint]:
    return [SweepPoint(run=run, **blank_fields(p, SweepPoint, exclude=["run"])) for p in points]

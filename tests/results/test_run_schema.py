"""The run payload's one definition (runners/delivery/schema.py) against the service it
feeds: its text lengths are the columns' and its choices the models' (the schema
is Django-free, so this is where the two are held together), and it answers
what docs/api.md promises without a database."""

from __future__ import annotations

import pytest
from django.db import models
from pydantic import ValidationError

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
from runners.delivery import schema
from runners.delivery.schema_types import field_errors
from tests.fixtures.api import api_run_payload

# Payload model → the model whose columns its text fields fill.
COLUMNS = [
    (schema.StackInput, Stack),
    (schema.ModelFileInput, ModelFile),
    (schema.ConfigurationInput, Configuration),
    (schema.WorkloadInput, Workload),
    (schema.SampleInput, Sample),
    (schema.SweepPointInput, SweepPoint),
    (schema.RunCreateInput, RunModel),
]


def _max_length(payload: type[schema.Payload], name: str) -> int | None:
    for item in payload.model_fields[name].metadata:
        if getattr(item, "max_length", None) is not None:
            return int(item.max_length)
    return None


@pytest.mark.parametrize(("payload", "model"), COLUMNS, ids=[p.__name__ for p, _ in COLUMNS])
def test_every_text_field_fits_its_column(payload, model):
    checked = 0
    for name in payload.model_fields:
        try:
            column = model._meta.get_field(name)
        except Exception:  # noqa: S112 - not a column of this model (a nested object, a list)
            continue
        if not isinstance(column, models.CharField | models.TextField) or column.choices or name == "sha256":
            continue  # choices are checked below; sha256's pattern fixes its length
        assert _max_length(payload, name) == column.max_length, f"{payload.__name__}.{name}"
        checked += 1
    assert checked, payload.__name__


@pytest.mark.parametrize(
    ("names", "choices"),
    [
        (schema.ENGINES, Engine),
        (schema.ARCHITECTURES, Architecture),
        (schema.SPECULATIVE_TYPES, SpeculativeType),
        (schema.STATUSES, RunStatus),
    ],
)
def test_the_choices_are_the_models(names, choices):
    assert list(names) == list(choices.values)


def test_a_valid_payload_keeps_only_what_was_sent_and_the_defaults():
    body = api_run_payload()
    del body["notes"]
    data = schema.validated(schema.RunCreateInput, body)
    assert "notes" not in data
    assert data["workload"]["version"] == body["workload"].get("version", "1")
    assert data["concurrency_levels"] == []
    assert str(data["uuid"]) == body["uuid"]
    assert [s["index"] for s in data["samples"]] == [s["index"] for s in body["samples"]]


def test_errors_name_each_field_with_the_apis_wording():
    body = api_run_payload()
    body["samples"][0]["tokens_generated"] = 12.5
    body["samples"][1]["index"] = body["samples"][0]["index"]
    body["configuration"]["ctx_size"] = "4096"
    del body["stack"]["engine"]
    with pytest.raises(ValidationError) as raised:
        schema.validated(schema.RunCreateInput, body)
    assert field_errors(raised.value) == {
        "stack.engine": ["This field is required."],
        "configuration.ctx_size": ["A number is required, not a string."],
        "samples.0.tokens_generated": ["A whole number is required."],
        "samples.1.index": [f"Duplicate index {body['samples'][0]['index']} (also at position 0)."],
    }


def test_the_limits_are_the_callers():
    body = api_run_payload()
    with pytest.raises(ValidationError) as raised:
        schema.validated(schema.RunCreateInput, body, limits=schema.Limits(samples=1))
    assert field_errors(raised.value) == {"samples": ["Ensure this field has no more than 1 elements."]}

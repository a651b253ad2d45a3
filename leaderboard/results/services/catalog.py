"""The catalog rows a run points at (stack, model file, configuration,
workload): each is found by its natural key and created with the rest when
missing, so two runs of the same setup share one row."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from django.db import IntegrityError, models, transaction

from leaderboard.results.models import Configuration, ModelFile, Stack, Workload
from leaderboard.results.services.fields import blank_fields
from leaderboard.results.services.keys import config_hash


def catalog_get_or_create(model: type, lookup: dict[str, Any], defaults: dict[str, Any] | None = None) -> Any:
    """Return the ``model`` row matching ``lookup``, created with ``defaults`` when missing."""
    # A concurrent ingest may create the same row between get and create; the
    # unique constraint catches that and the second get finds the winner.
    try:
        with transaction.atomic():
            obj, _ = model.objects.get_or_create(**lookup, defaults=defaults or {})  # type: ignore[attr-defined]
            return obj
    except IntegrityError:
        return model.objects.get(**lookup)  # type: ignore[attr-defined]


# Each catalog row is found by its natural key (the lookup) and created with
# the rest (the defaults) when missing.
_MODEL_FILE_KEY = ("name", "repo", "quantization", "sha256")


def stack_key(data: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    return blank_fields(data, Stack, exclude=["notes"]), {"notes": data.get("notes") or ""}


def model_file_key(data: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    fields = blank_fields(data, ModelFile)
    return {k: fields[k] for k in _MODEL_FILE_KEY}, {k: v for k, v in fields.items() if k not in _MODEL_FILE_KEY}


def configuration_key(data: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    fields = blank_fields(data, Configuration, exclude=["config_hash"])
    return {"config_hash": config_hash(fields)}, fields


def workload_key(data: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    return blank_fields(data, Workload, exclude=["description"]), {"description": data.get("description") or ""}


# Each catalog model, by the part of a run's payload that describes it, with its key.
CatalogKey = tuple[dict[str, Any], dict[str, Any]]  # (lookup, defaults)
CATALOG_KEYS: dict[type[models.Model], tuple[str, Callable[[Mapping[str, Any]], CatalogKey]]] = {
    Stack: ("stack", stack_key),
    ModelFile: ("model_file", model_file_key),
    Configuration: ("configuration", configuration_key),
    Workload: ("workload", workload_key),
}


def catalog_keys(parts: Mapping[str, Mapping[str, Any]]) -> dict[type[models.Model], CatalogKey]:
    """Return each catalog model's (lookup, defaults) for one run's payload ``parts``
    (``{"stack": …, "model_file": …, "configuration": …, "workload": …}``)."""
    return {model: key(parts[part]) for model, (part, key) in CATALOG_KEYS.items()}

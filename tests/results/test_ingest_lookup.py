"""The ingest's one-statement PostgreSQL lookup (results/speedups/lookup.py)
agrees with its plain ORM reference, row by row and field by field."""

from __future__ import annotations

import uuid

import pytest
from django.db import connection
from django.forms.models import model_to_dict

from leaderboard.results.models import Configuration, ModelFile, Stack, Workload
from leaderboard.results.services.catalog import configuration_key, model_file_key, stack_key, workload_key
from leaderboard.results.speedups.lookup import ingest_lookup, ingest_lookup_orm
from tests.fixtures.data import run_payload

pytestmark = pytest.mark.django_db


def _lookups(payload: dict) -> dict:
    return {
        Stack: stack_key(payload["stack"])[0],
        ModelFile: model_file_key(payload["model_file"])[0],
        Configuration: configuration_key(payload["configuration"])[0],
        Workload: workload_key(payload["workload"])[0],
    }


def _plain(found) -> tuple:
    catalog = {m.__name__: (row.pk, model_to_dict(row)) if row else None for m, row in found.catalog.items()}
    gpus = [(g.pk, model_to_dict(g)) for g in found.rig_gpus]
    return catalog, gpus, found.existing_rig_id


def test_the_postgresql_lookup_agrees_with_the_orm_reference(make_rig, make_run) -> None:
    assert connection.vendor == "postgresql"
    rig = make_rig(gpus=[("RTX 3090 Ti", 1), ("RTX 3090", 2)])
    other = make_rig(name="other")
    stored = make_run(rig=rig)
    make_run(rig=other, configuration={"ctx_size": 8192, "speculative_type": "mtp"})
    cases = [
        (run_payload(), stored.uuid),  # every row there, and the run
        (run_payload(model_file={"name": "never-seen", "quantization": "Q8_0"}), uuid.uuid4()),  # one missing
        (run_payload(configuration={"ctx_size": 8192, "speculative_type": "mtp"}), uuid.uuid4()),
    ]
    for payload, run_uuid in cases:
        for target in (rig, other):
            lookups = _lookups(payload)
            fast = ingest_lookup(rig=target, run_uuid=run_uuid, lookups=lookups)
            reference = ingest_lookup_orm(rig=target, run_uuid=run_uuid, lookups=lookups)
            assert _plain(fast) == _plain(reference)
    found = ingest_lookup(rig=rig, run_uuid=stored.uuid, lookups=_lookups(run_payload()))
    assert found.existing_rig_id == rig.pk and all(found.catalog.values())
    assert [g.model for g in found.rig_gpus] == ["RTX 3090 Ti", "RTX 3090"]

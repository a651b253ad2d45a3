"""The one-statement insert (results/speedups/ingest_sql.py) stores what its
plain reference, the ORM's save and bulk_create, stores: the same rows, field by
field, and the objects come back with their keys set either way."""

from __future__ import annotations

import pytest
from django.db import connection, transaction
from django.forms.models import model_to_dict

from leaderboard.results.models import Run, Sample, SweepPoint
from leaderboard.results.services import runs
from leaderboard.results.speedups import ingest_sql
from tests.fixtures.data import run_payload

pytestmark = pytest.mark.django_db(transaction=True)

_VOLATILE = {"id", "run", "uuid", "created_at", "updated_at", "finished_at"}


def _stored(run_uuid) -> tuple:
    run = Run.objects.get(uuid=run_uuid)
    fields = {k: v for k, v in model_to_dict(run).items() if k not in _VOLATILE}
    samples = [
        {k: v for k, v in model_to_dict(s).items() if k not in _VOLATILE}
        for s in Sample.objects.filter(run=run).order_by("index")
    ]
    points = [
        {k: v for k, v in model_to_dict(p).items() if k not in _VOLATILE}
        for p in SweepPoint.objects.filter(run=run).order_by("ctx_label")
    ]
    return fields, samples, points


def _create(rig, payload, monkeypatch, *, fast: bool):
    monkeypatch.setattr(ingest_sql, "applies", lambda: fast)
    with transaction.atomic():
        result = runs.run_create(rig=rig, **payload)
    assert result.created
    assert result.run.pk is not None and not result.run._state.adding
    assert all(s.pk is not None and s.run_id == result.run.pk for s in result.run.samples.all())
    return result.run.uuid


def test_the_one_statement_insert_stores_what_the_orm_stores(make_rig, monkeypatch):
    assert connection.vendor == "postgresql"
    rig = make_rig()
    points = [
        {"ctx_tokens": 4096, "ctx_label": "4K", "decode_tokens_per_s": 50.5, "note": "ß ✓"},
        {"ctx_tokens": None, "ctx_label": "198K", "decode_tokens_per_s": 20.0},  # a label only, as articles print
    ]
    plain = _create(rig, run_payload(sweep_points=points), monkeypatch, fast=False)
    fast = _create(rig, run_payload(sweep_points=points), monkeypatch, fast=True)
    assert _stored(fast) == _stored(plain)
    assert len(_stored(fast)[1]) > 1 and len(_stored(fast)[2]) > 0

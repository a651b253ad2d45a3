"""The bulk intake (results/services/bulk.py on speedups/bulk_sql.py) stores what
its plain reference, the single-run service called once per run, stores: the
same runs, samples, sweep points and catalog rows, field by field, with the same
summaries, whether its rows go in by SQL or by the ORM's bulk_create. The
comparison is first shown to tell two different ingests apart."""

from __future__ import annotations

import copy
import threading
import uuid
from typing import Any

import pytest
from django import db
from django.db import connection
from django.forms.models import model_to_dict
from django.test.utils import CaptureQueriesContext

from leaderboard.results.api.payloads import payload_checked
from leaderboard.results.models import Configuration, ModelFile, Run, Sample, Stack, SweepPoint, Workload
from leaderboard.results.services import bulk
from leaderboard.results.speedups import bulk_sql
from runners.delivery import schema
from tests.fixtures.api import api_run_payload

pytestmark = pytest.mark.django_db

_VOLATILE = {"id", "run", "created_at", "updated_at", "stack", "model_file", "configuration", "workload"}
_CATALOG = (Stack, ModelFile, Configuration, Workload)


def _payloads() -> list[dict[str, Any]]:
    """Runs of several setups: shared and new catalog rows, a failed run, an open run
    with a sweep and no samples, a run with no sweep, nulls in the samples."""
    base = api_run_payload(rig="api-rig")
    bodies = []
    for position in range(6):
        body = copy.deepcopy(base)
        body["uuid"] = str(uuid.uuid4())
        body["configuration"]["ctx_size"] = 4096 * (1 + position % 3)
        body["model_file"]["quantization"] = ["Q4_K_M", "Q8_0"][position % 2]
        for sample in body["samples"]:
            sample["decode_tokens_per_s_server"] += position
        bodies.append(body)
    bodies[1]["status"], bodies[1]["failure_reason"] = "failed", "out of memory"
    bodies[2].update(status="running", samples=[], finished_at=None)
    bodies[3]["sweep_points"] = []
    bodies[4]["samples"][0]["ttft_ms"] = None
    bodies[5]["stack"]["notes"] = "a new stack row"
    bodies[5]["stack"]["build"] = "b7001-0000000"
    return bodies


def _validated(bodies: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    datas = {}
    for index, body in enumerate(bodies):
        data, problems = payload_checked(schema.RunCreateInput, body)
        assert data is not None, problems
        datas[index] = data
    return datas


def _row(obj: Any, exclude: set[str]) -> dict[str, Any]:
    return {k: v for k, v in model_to_dict(obj).items() if k not in exclude}


def _snapshot(uuids: list[str]) -> list[tuple]:
    """Every stored row of the runs ``uuids`` (and the catalog rows they point at), keys left out."""
    out = []
    for run_uuid in uuids:
        run = Run.objects.get(uuid=run_uuid)
        catalog = tuple(
            _row(getattr(run, part), {"id"}) for part in ("stack", "model_file", "configuration", "workload")
        )
        samples = [_row(s, _VOLATILE) for s in Sample.objects.filter(run=run).order_by("index")]
        points = [_row(p, _VOLATILE) for p in SweepPoint.objects.filter(run=run).order_by("ctx_tokens", "ctx_label")]
        out.append((_row(run, _VOLATILE), catalog, samples, points))
    return out


def _ingest(rig, bodies, store) -> list[tuple]:
    """Store ``bodies`` with ``store`` on an empty catalog, snapshot them, then delete it all."""
    outcomes = store(rig=rig, datas=_validated(bodies))
    assert [o.status_code for o in outcomes.values()] == [201] * len(bodies)
    uuids = [b["uuid"] for b in bodies]
    snapshot = _snapshot(uuids)
    Run.objects.filter(uuid__in=uuids).delete()
    for model in _CATALOG:
        model.objects.all().delete()
    return snapshot


def test_the_comparison_tells_two_different_ingests_apart(rig_with_token):
    bodies = _payloads()
    changed = copy.deepcopy(bodies)
    changed[4]["samples"][2]["draft_n_accepted"] -= 1  # one value of one sample of one run
    plain = _ingest(rig_with_token.rig, bodies, bulk.runs_store_one_by_one)
    other = _ingest(rig_with_token.rig, changed, bulk.runs_store_one_by_one)
    assert plain != other
    assert plain[:4] == other[:4]  # only the changed run differs, and in its summary too
    assert plain[4][0]["acceptance_pct"] != other[4][0]["acceptance_pct"]


@pytest.mark.parametrize("sql", [True, False], ids=["sql", "orm"])
def test_bulk_ingest_stores_what_one_by_one_ingest_stores(rig_with_token, monkeypatch, sql):
    assert connection.vendor == "postgresql"
    monkeypatch.setattr(bulk_sql, "applies", lambda: sql)
    bodies = _payloads()
    plain = _ingest(rig_with_token.rig, bodies, bulk.runs_store_one_by_one)
    with CaptureQueriesContext(connection) as queries:
        fast = _ingest(rig_with_token.rig, bodies, bulk.runs_store_bulk)
    assert fast == plain
    assert len(fast) == 6
    assert [len(samples) for _, _, samples, _ in fast] == [3, 3, 0, 3, 3, 3]
    assert fast[1][0]["status"] == "failed" and fast[2][0]["summary_source"] == "sweep"
    if sql:
        # Stored as a batch: not one statement per run, sample or point.
        inserts = [q for q in queries.captured_queries if q["sql"].startswith('INSERT INTO "results_run"')]
        assert len(inserts) == 1


@pytest.mark.django_db(transaction=True)
def test_a_batch_with_a_uuid_stored_meanwhile_falls_back_to_one_by_one(rig_with_token, monkeypatch):
    datas = _validated(_payloads())
    real = bulk.runs_insert_new

    def other_request() -> None:
        try:
            bulk.runs_store_one_by_one(rig=rig_with_token.rig, datas={0: datas[0]})
        finally:
            db.connection.close()

    def racing(*, rig, datas):
        # Another request (its own connection) stores run 0 after the batch looked its uuids up.
        thread = threading.Thread(target=other_request)
        thread.start()
        thread.join(timeout=60)
        return real(rig=rig, datas=datas)

    monkeypatch.setattr(bulk, "runs_insert_new", racing)
    outcomes = bulk.runs_store_bulk(rig=rig_with_token.rig, datas=datas)
    assert [outcomes[i].status_code for i in range(6)] == [200, 201, 201, 201, 201, 201]
    assert Run.objects.count() == 6
    assert Sample.objects.count() == 15

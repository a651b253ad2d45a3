"""The ingest benchmark's parts: its payload is a valid run under the API
contract, its COPY reference writes the same rows the service stores, and its
percentile is the linear one the service uses. (The benchmark itself prints
figures; it is not a timed test.)"""

from __future__ import annotations

import random
import statistics
import sys
from pathlib import Path

import pytest
from django.db import connection
from rest_framework.test import APIClient

from leaderboard.results.models import Rig, RigGpu, RigToken, Run, Sample, SweepPoint

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import ingest  # noqa: E402
import ingest_bulk  # noqa: E402
import ingest_db  # noqa: E402


def _post_one() -> Run:
    rig = Rig.objects.create(name=ingest.RIG_NAME)
    RigGpu.objects.create(rig=rig, model="RTX 3090", count=1, vram_gb=24)
    _, raw = RigToken.issue(rig=rig)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {raw}")
    response = client.post("/api/runs/", ingest.run_body(random.Random(7)), content_type="application/json")
    assert response.status_code == 201, response.content
    return Run.objects.get(uuid=response.json()["uuid"])


@pytest.mark.django_db
def test_its_payload_is_stored_as_one_run_with_10_samples_and_8_sweep_points():
    run = _post_one()
    assert run.status == "finished"
    assert run.n_samples == ingest.SAMPLES_PER_RUN == 10
    assert Sample.objects.filter(run=run).count() == 10
    assert SweepPoint.objects.filter(run=run).count() == ingest.SWEEP_POINTS_PER_RUN == 8
    assert run.decode_tokens_per_s_mean is not None


@pytest.mark.django_db(transaction=True)
def test_its_copy_reference_writes_the_same_rows_the_service_stored():
    template = _post_one()
    db = connection.settings_dict
    url = f"postgres://{db['USER']}@{db['HOST']}:{db['PORT'] or 5432}/{db['NAME']}"
    seconds = ingest_db.copy_reference(url, 3)
    assert seconds > 0
    assert ingest_db.table_counts(url) == {"results_run": 4, "results_sample": 40, "results_sweeppoint": 32}
    copies = Run.objects.exclude(pk=template.pk)
    assert len({run.uuid for run in copies}) == 3
    for run in copies:
        assert run.decode_tokens_per_s_mean == template.decode_tokens_per_s_mean
        assert list(run.samples.values_list("index", flat=True)) == list(range(1, 11))
        assert run.sweep_points.count() == 8


def test_percentile_is_the_linear_one_the_service_uses():
    values = [float(v) for v in range(1, 101)]
    oracle = statistics.quantiles(values, n=100, method="inclusive")
    assert ingest.percentile(values, 50) == pytest.approx(oracle[49]) and oracle[49] == pytest.approx(50.5)
    assert ingest.percentile(values, 95) == pytest.approx(oracle[94]) and oracle[94] == pytest.approx(95.05)
    assert ingest.percentile([3.0], 95) == 3.0


@pytest.mark.django_db
def test_its_bulk_bodies_are_batches_the_bulk_intake_stores_whole():
    rig = Rig.objects.create(name=ingest.RIG_NAME)
    _, raw = RigToken.issue(rig=rig)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {raw}")
    bodies = ingest_bulk.bulk_bodies(ingest.run_body, 5, 2, seed=3)
    assert len(bodies) == 3
    for body in bodies:
        response = client.post("/api/runs/bulk/", body, content_type="application/json")
        assert response.status_code == 200, response.content
        assert {r["status"] for r in response.json()["runs"]} == {201}
    assert Run.objects.count() == 5
    assert Sample.objects.count() == 5 * ingest.SAMPLES_PER_RUN

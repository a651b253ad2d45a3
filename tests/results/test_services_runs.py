"""The ingest service: summaries from raw samples, idempotency, comparison keys."""

from __future__ import annotations

import pytest

from leaderboard.results.models import Run, Sample
from leaderboard.results.services.runs import run_create
from tests.fixtures.data import run_payload

pytestmark = pytest.mark.django_db


def test_it_computes_the_summary_from_raw_samples(make_run):
    run = make_run()
    assert run.n_samples == 3
    assert run.decode_tokens_per_s_mean == pytest.approx(100.0)
    assert run.decode_tokens_per_s_stdev == pytest.approx(2.0)
    assert run.decode_tokens_per_s_range == pytest.approx(4.0)
    assert run.acceptance_pct == pytest.approx(75.0)
    assert Sample.objects.filter(run=run).count() == 3


def test_it_returns_the_stored_run_for_a_repeated_uuid(make_rig):
    rig = make_rig()
    payload = run_payload()
    first = run_create(rig=rig, **payload)
    second = run_create(rig=rig, **payload)
    assert first.created and not second.created
    assert second.run.pk == first.run.pk
    assert Run.objects.count() == 1 and Sample.objects.count() == 3


def test_runs_on_the_same_hardware_model_and_workload_share_a_key(make_rig, make_run):
    rig = make_rig()
    a = make_run(rig=rig)
    b = make_run(rig=rig, configuration={"ctx_size": 8192, "speculative_type": "mtp"})
    other = make_run(rig=make_rig(name="other", gpus=[("RTX 5090", 1)]))
    assert a.comparison_key == b.comparison_key
    assert a.configuration_id != b.configuration_id
    assert other.comparison_key != a.comparison_key

"""The create path's shortcuts give what the slow path gives: the fast input
check returns DRF's validated data (or steps aside), and the 201 body built
from the objects in memory equals the stored run's detail."""

from __future__ import annotations

import pytest

from leaderboard.results.api.serializers import fast
from leaderboard.results.api.views.runs import RunCreateApi
from leaderboard.results.models import Run, Sample
from tests.fixtures.api import api_run_payload, post_json

pytestmark = pytest.mark.django_db
URL = "/api/runs/"


def _drf(body):
    serializer = RunCreateApi.InputSerializer(data=body)
    return serializer.validated_data if serializer.is_valid() else None


def test_the_fast_check_returns_what_the_serializer_validates(rig_with_token):
    sparse = api_run_payload(status="running", samples=[{"index": 2}], sweep_points=[], notes=None)
    sparse["workload"] = {"name": "w"}
    sparse["configuration"] = {}
    for body in (api_run_payload(), sparse):
        fast_data = fast.validated_or_none(RunCreateApi.InputSerializer, body)
        assert fast_data is not None
        assert fast_data == _drf(body)


@pytest.mark.parametrize(
    "change",
    [
        lambda b: b["samples"][0].update(ttft_ms="95"),
        lambda b: b["samples"][0].update(draft_n_accepted=1601),
        lambda b: b["samples"][1].update(index=1),
        lambda b: b.update(status="failed", failure_reason=""),
        lambda b: b["model_file"].update(sha256="xyz"),
        lambda b: b.update(started_at="yesterday"),
        lambda b: b["stack"].pop("engine"),
        lambda b: b["configuration"].update(thinking="yes"),
    ],
)
def test_the_fast_check_steps_aside_for_anything_the_serializer_would_question(rig_with_token, change):
    body = api_run_payload()
    change(body)
    assert fast.validated_or_none(RunCreateApi.InputSerializer, body) is None


def test_the_201_body_is_the_stored_runs_detail(rig_with_token):
    body = api_run_payload()
    body["samples"].reverse()  # stored and listed by index whatever the order sent
    created = post_json(rig_with_token.client, URL, body)
    assert created.status_code == 201
    assert created.json() == rig_with_token.client.get(f"{URL}{body['uuid']}/").json()
    assert [s["index"] for s in created.json()["samples"]] == [1, 2, 3]
    run = Run.objects.get(uuid=body["uuid"])
    assert sorted(Sample.objects.filter(run=run).values_list("index", flat=True)) == [1, 2, 3]

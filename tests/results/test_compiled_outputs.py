"""The compiled output serializers give exactly what DRF's own to_representation gives."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from rest_framework import generics

from leaderboard.results import selectors
from leaderboard.results.api.serializers import outputs
from leaderboard.results.api.views.base import CompiledListMixin
from leaderboard.results.models import Run
from leaderboard.results.speedups.outputs import compiled
from tests.fixtures.api import api_run_payload, post_json

pytestmark = pytest.mark.django_db


def drf(serializer_class, instance):
    return serializer_class(instance).data


def test_it_represents_every_published_run_and_source_as_drf_does():
    call_command("import_published", verbosity=0)
    runs = list(selectors.run_detail_queryset())
    assert len(runs) > 10
    for run in runs:
        assert compiled(outputs.RunDetailOutputSerializer)(run) == drf(outputs.RunDetailOutputSerializer, run)
        assert compiled(outputs.RunListOutputSerializer)(run) == drf(outputs.RunListOutputSerializer, run)
    for source in selectors.source_detail_queryset():
        assert compiled(outputs.SourceDetailOutputSerializer)(source) == drf(
            outputs.SourceDetailOutputSerializer, source
        )


def test_it_represents_a_submitted_run_with_odd_values_as_drf_does(rig_with_token):
    body = api_run_payload(notes="<b>ünïcode</b> 🚀", started_at="2026-11-21T23:00:00.123456+02:00")
    body["samples"][0].update(energy_j=None, output_ok=None, flags=["repeated-ngram"], stop_reason="")
    body["configuration"].update(threads=None, extra_args=["--no-mmap", "-ot", "exps=CPU"])
    created = post_json(rig_with_token.client, "/api/runs/", body)
    assert created.status_code == 201, created.json()
    run = selectors.run_get(uuid=body["uuid"])
    assert run is not None
    expected = drf(outputs.RunDetailOutputSerializer, run)
    assert compiled(outputs.RunDetailOutputSerializer)(run) == expected
    # The 201 body (built from the objects just inserted) is the same document GET gives.
    assert created.json() == rig_with_token.client.get(f"/api/runs/{body['uuid']}/").json()
    assert expected["started_at"] == "2026-11-21T21:00:00.123456Z"


def test_a_missing_optional_attribute_is_left_out_as_drf_leaves_it_out(make_run):
    run = make_run()
    rig = Run.objects.select_related("rig").get(pk=run.pk).rig
    doc = compiled(outputs.RigOutputSerializer)(rig)
    assert "n_runs" not in doc  # not annotated: IntegerField(required=False) is skipped
    assert doc == drf(outputs.RigOutputSerializer, rig)


LIST_URLS = [
    "/api/runs/",
    "/api/runs/?ordering=-decode_tokens_per_s_mean&page_size=7&page=2",
    "/api/runs/?cursor=",
    "/api/rigs/?ordering=-n_runs",
    "/api/sources/",
]


@pytest.mark.parametrize("url", LIST_URLS)
def test_every_api_list_answers_what_drfs_own_list_answers(client, monkeypatch, url):
    """The lists represent their page with the compiled serializer (CompiledListMixin):
    the same answer, byte for byte, as DRF's ListAPIView.list on the same request."""
    call_command("import_published", verbosity=0)
    compiled_answer = client.get(url)
    assert compiled_answer.status_code == 200, compiled_answer.content
    assert len(compiled_answer.json()["results"]) > 1
    monkeypatch.setattr(CompiledListMixin, "list", generics.ListAPIView.list)
    drf_answer = client.get(url)
    assert drf_answer.content == compiled_answer.content

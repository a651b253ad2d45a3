"""Stored JSON documents are bounded twice (issue 22): at ingest (depth and bytes of
``fingerprint`` and ``extra``) and on the page (the run page prints at most a few
thousand characters of a document, whatever was stored before the bounds)."""

from __future__ import annotations

import json
import sys

import pytest

from leaderboard.core.fields import EXTRA_DEPTH
from leaderboard.results.models import Run
from runners.delivery.schema import MAX_DOCUMENT_BYTES, MAX_DOCUMENT_DEPTH
from tests.fixtures.api import api_run_payload, post_json

pytestmark = pytest.mark.django_db


def nested(depth: int, core: object) -> object:
    value = core
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize("field", ["fingerprint", "extra"])
def test_a_document_nested_too_deep_is_refused_at_ingest(rig_with_token, field):
    body = api_run_payload(**{field: {"x": nested(MAX_DOCUMENT_DEPTH, 0)}})
    response = post_json(rig_with_token.client, "/api/runs/", body)
    assert response.status_code == 400 and field in response.json()["errors"], response.json()
    assert Run.objects.count() == 0
    at_the_limit = api_run_payload(**{field: {"x": nested(MAX_DOCUMENT_DEPTH - 2, 0)}})
    assert post_json(rig_with_token.client, "/api/runs/", at_the_limit).status_code == 201


def test_a_document_too_large_is_refused_at_ingest(rig_with_token):
    body = api_run_payload(fingerprint={"flags": "x" * MAX_DOCUMENT_BYTES})
    response = post_json(rig_with_token.client, "/api/runs/", body)
    assert response.status_code == 400 and "fingerprint" in response.json()["errors"]


def test_the_run_page_prints_a_huge_stored_document_cut_short(rig_with_token, client):
    """The report's case: 900 nested lists around 100k zeros made a 182 MB page."""
    assert post_json(rig_with_token.client, "/api/runs/", api_run_payload()).status_code == 201
    run = Run.objects.get()
    Run.objects.filter(pk=run.pk).update(fingerprint={"x": nested(900, [0] * 100_000)})
    page = client.get(f"/runs/{run.pk}/")
    assert page.status_code == 200
    assert len(page.content) < 200_000
    assert "cut at 20,000 characters" in page.content.decode()
    assert f"/api/runs/{run.uuid}/" in page.content.decode()


def _depth(value: object) -> int:
    depth = 0
    while isinstance(value, list) and value:
        value, depth = value[0], depth + 1
    return depth


def test_a_stored_document_deeper_than_the_recursion_limit_is_read_whatever_the_callers_depth():
    """Whether the run page could decode the report's document depended on the frames above it
    (it answered 500 under pytest-xdist): a document past the interpreter's limit still reads."""
    field = Run._meta.get_field("fingerprint")
    limit = sys.getrecursionlimit()
    deep = limit + 100
    with pytest.raises(RecursionError):
        json.loads("[" * deep + "]" * deep)
    assert _depth(field.from_db_value("[" * deep + "]" * deep, None, None)) == deep - 1
    assert sys.getrecursionlimit() == limit
    too_deep = limit + EXTRA_DEPTH + 100
    unread = field.from_db_value("[" * too_deep + "]" * too_deep, None, None)
    assert unread == {"not_read": f"nested deeper than {EXTRA_DEPTH:,} levels ({2 * too_deep:,} characters stored)"}
    assert sys.getrecursionlimit() == limit

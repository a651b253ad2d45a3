"""Every API route that takes a body reads it with a bounded parser and declares
its shape in the OpenAPI schema (issue 22): a new endpoint without them fails here."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.urls import URLPattern, URLResolver, get_resolver
from rest_framework.views import APIView

from leaderboard.intake.parsers import LlamaBenchFileParser
from leaderboard.results.api.parsers import BoundedJSONParser

BODY_METHODS = ("post", "put", "patch")
BOUNDED_PARSERS = (BoundedJSONParser, LlamaBenchFileParser)
# Writes that take no body at all, each with why (the schema declares none).
NO_BODY = {
    ("/api/jobs/{job_id}/run-again/", "post"): "a copy of the job: nothing to send",
}


def api_views(patterns: Any = None, prefix: str = "") -> Iterator[tuple[str, type[APIView]]]:
    """Yield (route, DRF view class) for every route of the URL conf."""
    for entry in get_resolver().url_patterns if patterns is None else patterns:
        if isinstance(entry, URLResolver):
            yield from api_views(entry.url_patterns, prefix + str(entry.pattern))
        elif isinstance(entry, URLPattern):
            view = getattr(entry.callback, "cls", None)
            if isinstance(view, type) and issubclass(view, APIView):
                yield prefix + str(entry.pattern), view


def body_views() -> list[tuple[str, type[APIView], str]]:
    return [(route, view, m) for route, view in api_views() for m in BODY_METHODS if hasattr(view, m)]


def test_the_enumeration_finds_the_writes_it_must_check():
    found = {(view.__name__, method) for _, view, method in body_views()}
    for known in [("RunsApi", "post"), ("TrialCreateApi", "post"), ("JobStatusApi", "post")]:
        assert known in found


@pytest.mark.parametrize(("route", "view", "method"), body_views(), ids=lambda v: getattr(v, "__name__", str(v)))
def test_every_route_taking_a_body_reads_it_with_a_bounded_parser(route, view, method):
    parsers = view.parser_classes
    assert parsers, route
    assert all(issubclass(parser, BOUNDED_PARSERS) for parser in parsers), (route, parsers)


@pytest.mark.django_db
def test_every_route_taking_a_body_declares_it_in_the_schema(client):
    schema = client.get("/api/schema/?format=json").json()
    writes = {
        (path, method): operation
        for path, operations in schema["paths"].items()
        for method, operation in operations.items()
        if method in BODY_METHODS
    }
    assert len(writes) == len(body_views()), "a route taking a body is missing from the schema"
    for (path, method), operation in writes.items():
        if (path, method) in NO_BODY:
            assert "requestBody" not in operation, path
            continue
        content = operation.get("requestBody", {}).get("content", {})
        assert content, f"{method.upper()} {path} declares no request body"
        for media, body in content.items():
            shape = body.get("schema", {})
            assert declared(shape) or shape.get("format") == "binary" or shape.get("type") == "string", (
                path,
                media,
                shape,
            )


def declared(shape: dict[str, Any]) -> bool:
    """Whether a request body's schema is a declared component, or a list of one
    (POST /api/runs/bulk/: {"runs": [RunCreateInput, …]}, each run checked on its own)."""
    if "$ref" in shape:
        return True
    properties = shape.get("properties") or {}
    return bool(properties) and all(
        "$ref" in p or (p.get("type") == "array" and "$ref" in p.get("items", {})) for p in properties.values()
    )

"""POST /api/runs/ with bad input: a 400 (or 413) naming each bad field and
why, and nothing stored."""

from __future__ import annotations

import io
import json

import pytest
from django.test import override_settings

from leaderboard.core.api.errors import RequestTooLarge
from leaderboard.results.api.parsers import BoundedJSONParser
from leaderboard.results.models import ModelFile, Run, Sample, Stack
from tests.fixtures.api import api_run_payload, post_json

pytestmark = pytest.mark.django_db
URL = "/api/runs/"


def errors_of(response):
    assert response.status_code == 400, (response.status_code, response.content[:500])
    body = response.json()
    assert set(body) == {"errors"}
    return body["errors"]


def assert_nothing_stored():
    assert Run.objects.count() == 0
    assert Sample.objects.count() == 0
    assert Stack.objects.count() == 0
    assert ModelFile.objects.count() == 0


def test_it_names_every_missing_required_field(rig_with_token):
    body = api_run_payload()
    for key in ("uuid", "status", "workload"):
        del body[key]
    del body["stack"]["engine"]
    del body["model_file"]["name"]
    del body["samples"][1]["index"]
    del body["sweep_points"][0]["ctx_tokens"]
    errors = errors_of(post_json(rig_with_token.client, URL, body))
    assert set(errors) == {
        "uuid",
        "status",
        "workload",
        "stack.engine",
        "model_file.name",
        "samples.1.index",
        "sweep_points.0.ctx_tokens",
    }
    assert errors["uuid"] == ["This field is required."]
    assert_nothing_stored()


@pytest.mark.parametrize(
    ("field", "value", "why"),
    [
        ("decode_tokens_per_s_server", -1.0, "greater than or equal to 0"),
        ("decode_tokens_per_s_client", 100_001, "less than or equal to 100000"),
        ("prefill_tokens_per_s", 10_000_001, "less than or equal to 10000000"),
        ("ttft_ms", -0.5, "greater than or equal to 0"),
        ("power_w_mean", -10, "greater than or equal to 0"),
        ("tokens_generated", -1, "greater than or equal to 0"),
    ],
)
def test_it_rejects_negative_or_absurd_figures(rig_with_token, field, value, why):
    body = api_run_payload()
    body["samples"][2][field] = value
    errors = errors_of(post_json(rig_with_token.client, URL, body))
    assert list(errors) == [f"samples.2.{field}"]
    assert why in errors[f"samples.2.{field}"][0]
    assert_nothing_stored()


def test_it_rejects_more_accepted_draft_tokens_than_drafted(rig_with_token):
    body = api_run_payload()
    body["samples"][1]["draft_n"] = 10
    body["samples"][1]["draft_n_accepted"] = 11
    errors = errors_of(post_json(rig_with_token.client, URL, body))
    assert errors == {"samples.1.draft_n_accepted": ["Accepted draft tokens (11) exceed drafted tokens (10)."]}
    assert_nothing_stored()


@pytest.mark.parametrize("value", ["fast", "12.5", True, [1], {"t/s": 1}])
def test_it_rejects_non_numeric_figures(rig_with_token, value):
    body = api_run_payload()
    body["samples"][0]["decode_tokens_per_s_server"] = value
    body["sweep_points"][1]["decode_tokens_per_s"] = value
    body["configuration"]["ctx_size"] = value
    errors = errors_of(post_json(rig_with_token.client, URL, body))
    assert set(errors) == {
        "samples.0.decode_tokens_per_s_server",
        "sweep_points.1.decode_tokens_per_s",
        "configuration.ctx_size",
    }
    assert "number is required" in errors["samples.0.decode_tokens_per_s_server"][0]
    assert_nothing_stored()


def test_it_rejects_a_fractional_count(rig_with_token):
    body = api_run_payload()
    body["samples"][0]["tokens_generated"] = 12.5
    errors = errors_of(post_json(rig_with_token.client, URL, body))
    assert errors == {"samples.0.tokens_generated": ["A whole number is required."]}


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("stack", "engine"), "llama.cpp-turbo"),
        (("model_file", "architecture"), "transformer"),
        (("configuration", "speculative_type"), "medusa"),
        (("status",), "done"),
    ],
)
def test_it_rejects_unknown_enum_values(rig_with_token, path, value):
    body = api_run_payload()
    target = body
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    errors = errors_of(post_json(rig_with_token.client, URL, body))
    dotted = ".".join(path)
    assert list(errors) == [dotted]
    assert errors[dotted][0].startswith(f'"{value}" is not one of: ')
    assert_nothing_stored()


@override_settings(RIGBOARD_MAX_SAMPLES=4, RIGBOARD_MAX_SWEEP_POINTS=2)
def test_it_rejects_more_samples_and_sweep_points_than_the_limits(rig_with_token):
    body = api_run_payload()
    body["samples"] = [dict(body["samples"][0], index=i) for i in range(1, 6)]
    body["sweep_points"] = [dict(body["sweep_points"][0], ctx_tokens=1024 * i) for i in range(1, 4)]
    errors = errors_of(post_json(rig_with_token.client, URL, body))
    assert errors == {
        "samples": ["Ensure this field has no more than 4 elements."],
        "sweep_points": ["Ensure this field has no more than 2 elements."],
    }
    assert_nothing_stored()


def test_it_rejects_a_duplicate_sample_index(rig_with_token):
    body = api_run_payload()
    body["samples"][2]["index"] = 1
    errors = errors_of(post_json(rig_with_token.client, URL, body))
    assert errors == {"samples.2.index": ["Duplicate index 1 (also at position 0)."]}
    assert_nothing_stored()


def test_it_reports_a_duplicate_index_together_with_other_sample_errors(rig_with_token):
    body = api_run_payload()
    body["samples"][0]["ttft_ms"] = -1
    body["samples"][2]["index"] = 2
    errors = errors_of(post_json(rig_with_token.client, URL, body))
    assert set(errors) == {"samples.0.ttft_ms", "samples.2.index"}


@override_settings(RIGBOARD_MAX_BODY_BYTES=20_000)
def test_it_answers_413_with_json_for_a_body_over_the_limit(rig_with_token):
    body = api_run_payload(server_log_tail="x" * 30_000)
    response = post_json(rig_with_token.client, URL, body)
    assert response.status_code == 413
    assert response["Content-Type"].startswith("application/json")
    assert "20000 bytes" in response.json()["errors"]["body"][0]
    assert_nothing_stored()


@override_settings(RIGBOARD_MAX_BODY_BYTES=20_000)
def test_the_parser_stops_at_the_limit_when_no_length_is_declared():
    """Chunked uploads declare no Content-Length; the parser reads at most limit + 1 bytes."""
    raw = json.dumps(api_run_payload(server_log_tail="x" * 30_000)).encode()
    stream = io.BytesIO(raw)
    with pytest.raises(RequestTooLarge):
        BoundedJSONParser().parse(stream, "application/json", {})
    assert stream.tell() == 20_001


@override_settings(DATA_UPLOAD_MAX_MEMORY_SIZE=10_000, RIGBOARD_MAX_BODY_BYTES=10_000)
def test_it_answers_413_with_json_when_django_refuses_the_body(rig_with_token, monkeypatch):
    """Whatever reads request.body first (a middleware, a parser), Django's own
    limit raises RequestDataTooBig; the API answers it with 413 JSON too."""
    from leaderboard.results.api import parsers

    def read_body_first(self, stream, media_type=None, parser_context=None):
        parser_context["request"].body  # noqa: B018 - Django checks the limit here

    monkeypatch.setattr(parsers.BoundedJSONParser, "parse", read_body_first)
    response = post_json(rig_with_token.client, URL, api_run_payload(server_log_tail="x" * 20_000))
    assert response.status_code == 413
    assert response.json()["errors"]["body"] == ["The request body is too large."]
    assert_nothing_stored()


def test_it_names_the_body_for_malformed_json(rig_with_token):
    response = rig_with_token.client.post(URL, data='{"uuid": "x", "samples": [1, 2', content_type="application/json")
    errors = errors_of(response)
    assert list(errors) == ["body"]
    assert errors["body"][0].startswith("Malformed JSON")
    assert_nothing_stored()


def test_it_names_the_body_for_deeply_nested_json(rig_with_token):
    response = rig_with_token.client.post(URL, data="[" * 100_000 + "]" * 100_000, content_type="application/json")
    assert list(errors_of(response)) == ["body"]


def test_it_asks_for_an_object_when_the_body_is_a_list(rig_with_token):
    errors = errors_of(post_json(rig_with_token.client, URL, [api_run_payload()]))
    assert list(errors) == ["body"]


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity"])
def test_it_rejects_nan_and_infinity_naming_the_field(rig_with_token, literal):
    raw = json.dumps(api_run_payload()).replace('"ttft_ms": 95.0', f'"ttft_ms": {literal}', 1)
    raw = raw.replace('"extra": {}', f'"extra": {{"drift": [1, {literal}]}}')
    response = rig_with_token.client.post(URL, data=raw, content_type="application/json")
    errors = errors_of(response)
    assert set(errors) == {"samples.0.ttft_ms", "extra.drift.1"}
    assert errors["samples.0.ttft_ms"] == [f"{literal} is not a number; send null when a figure is missing."]
    assert_nothing_stored()


def test_it_rejects_an_out_of_range_literal(rig_with_token):
    raw = json.dumps(api_run_payload()).replace('"ttft_ms": 95.0', '"ttft_ms": 1e999', 1)
    errors = errors_of(rig_with_token.client.post(URL, data=raw, content_type="application/json"))
    assert errors == {"samples.0.ttft_ms": ["The number is out of range."]}


def test_it_rejects_text_postgresql_cannot_store(rig_with_token):
    raw = json.dumps(api_run_payload(notes="nul \u0000 here")).replace(
        '"failure_reason": ""', '"failure_reason": "\\ud800"'
    )
    errors = errors_of(rig_with_token.client.post(URL, data=raw, content_type="application/json"))
    assert errors == {
        "notes": ["Null characters are not allowed."],
        "failure_reason": ["The text contains an unpaired UTF-16 surrogate."],
    }
    assert_nothing_stored()


def test_it_rejects_a_failed_run_without_a_reason_and_a_finished_run_without_samples(rig_with_token):
    errors = errors_of(post_json(rig_with_token.client, URL, api_run_payload(status="failed", failure_reason="")))
    assert errors == {"failure_reason": ["A failed run needs a failure_reason."]}
    errors = errors_of(post_json(rig_with_token.client, URL, api_run_payload(samples=[])))
    assert list(errors) == ["samples"]
    assert_nothing_stored()


def test_it_rejects_a_run_that_finished_before_it_started(rig_with_token):
    body = api_run_payload(started_at="2026-11-21T21:00:00Z", finished_at="2026-11-21T20:00:00Z")
    assert errors_of(post_json(rig_with_token.client, URL, body)) == {
        "finished_at": ["finished_at is before started_at."]
    }


def test_it_rejects_a_bad_uuid_and_a_bad_sha256(rig_with_token):
    body = api_run_payload(uuid="not-a-uuid")
    body["model_file"]["sha256"] = "xyz"
    errors = errors_of(post_json(rig_with_token.client, URL, body))
    assert set(errors) == {"uuid", "model_file.sha256"}
    assert_nothing_stored()


def test_it_rejects_a_non_object_where_an_object_belongs(rig_with_token):
    body = api_run_payload(stack="llama.cpp", fingerprint=[1, 2])
    errors = errors_of(post_json(rig_with_token.client, URL, body))
    assert set(errors) == {"stack", "fingerprint"}

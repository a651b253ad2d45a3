"""Input a hostile or unlucky client sends: every answer is a 4xx naming the
field (or a correct 200), never a 5xx, and nothing is stored on a refusal.
The reproducers of issue 11, "Answers that must be 4xx, never 5xx"."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime

import pytest
from django.test import override_settings

from leaderboard.jobs.services import jobs_enqueue
from leaderboard.results.models import Run
from tests.fixtures.api import api_run_payload, post_json
from tests.jobs.conftest import attach_spec

pytestmark = pytest.mark.django_db


def errors_of(response, status: int = 400) -> dict[str, list[str]]:
    assert response.status_code == status, (response.status_code, response.content[:500])
    return response.json()["errors"]


def post_raw(client, url: str, text: str, **extra):
    return client.post(url, data=text.encode("utf-8"), content_type="application/json", **extra)


def open_run(rig_with_token) -> dict:
    body = api_run_payload(status="running", finished_at=None)
    assert post_json(rig_with_token.client, "/api/runs/", body).status_code == 201
    return body


# --- 1. time zone displacements PostgreSQL cannot store --------------------------------


@pytest.mark.parametrize("param", ["created_after", "created_before"])
@pytest.mark.parametrize("value", ["2026-01-01T00:00:00-20:00", "2026-01-01T00:00:00+23:59"])
def test_a_list_filter_with_a_far_utc_offset_is_read_in_utc(api_client, rig_with_token, param, value):
    post_json(rig_with_token.client, "/api/runs/", api_run_payload())
    Run.objects.update(created_at=datetime(2026, 1, 1, 21, 0, tzinfo=UTC))

    response = api_client.get("/api/runs/", {param: value})

    assert response.status_code == 200, response.content[:300]
    # -20:00 is 20:00 UTC (the run is after it), +23:59 is 00:01 UTC the day before.
    expected = {"created_after": 1, "created_before": 0}[param]
    assert response.json()["count"] == expected


def test_a_list_filter_before_year_one_in_utc_is_a_400_naming_it(api_client):
    errors = errors_of(api_client.get("/api/runs/", {"created_after": "0001-01-01T00:00:00+05:00"}))
    assert "created_after" in errors


def test_a_run_timestamp_with_a_far_utc_offset_is_stored_in_utc(rig_with_token):
    body = api_run_payload(started_at="2026-11-21T01:00:00-20:00", finished_at="2026-11-21T21:30:00Z")
    response = post_json(rig_with_token.client, "/api/runs/", body)
    assert response.status_code == 201, response.content[:300]
    assert Run.objects.get().started_at == datetime(2026, 11, 21, 21, 0, tzinfo=UTC)


# --- 2. lone surrogates, in keys and in values -----------------------------------------


@pytest.mark.parametrize("field", ["extra", "fingerprint"])
def test_a_lone_surrogate_key_is_a_400_that_names_it(rig_with_token, field):
    text = json.dumps(api_run_payload(**{field: {"\udfff": 1}}))  # ensure_ascii: sent as \udfff

    errors = errors_of(post_raw(rig_with_token.client, "/api/runs/", text))

    assert list(errors) == [f"{field}.\\udfff"]
    assert Run.objects.count() == 0


def test_a_lone_surrogate_in_finish_extra_and_in_a_sample_key_is_a_400(rig_with_token):
    body = open_run(rig_with_token)
    finish = json.dumps({"status": "finished", "extra": {"k\ud800": "v"}})
    samples = json.dumps({"samples": [{"index": 9, "\udfff": 1}]})

    finish_errors = errors_of(post_raw(rig_with_token.client, f"/api/runs/{body['uuid']}/finish/", finish))
    sample_errors = errors_of(post_raw(rig_with_token.client, f"/api/runs/{body['uuid']}/samples/", samples))

    assert list(finish_errors) == ["extra.k\\ud800"]
    assert list(sample_errors) == ["samples.0.\\udfff"]
    assert Run.objects.get().status == "running"


@pytest.fixture
def job(make_rig_with_token, celery_broker):
    rig = make_rig_with_token("api-rig")
    return rig, jobs_enqueue(rig=rig.rig, kind="suite", spec=attach_spec(), time_limit_s=600)


def test_a_lone_surrogate_job_status_is_a_400(job):
    rig, queued = job
    text = json.dumps({"status": "\ud800", "attempt": "a\udfff"})

    errors = errors_of(post_raw(rig.client, f"/api/jobs/{queued.pk}/status/", text))

    assert set(errors) == {"status", "attempt"}
    queued.refresh_from_db()
    assert queued.status == "queued"


# --- 3. deep nesting on every JSON endpoint ------------------------------------------


def test_a_body_nested_thousands_deep_is_a_400_on_every_json_endpoint(rig_with_token, job):
    rig, queued = job
    body = open_run(rig_with_token)
    deep = '{"status": ' + "[" * 5000 + "]" * 5000 + "}"
    for url in (
        "/api/runs/",
        f"/api/runs/{body['uuid']}/samples/",
        f"/api/runs/{body['uuid']}/finish/",
        f"/api/jobs/{queued.pk}/status/",
    ):
        errors = errors_of(post_raw(rig.client, url, deep))
        assert "body" in errors, url


@pytest.mark.parametrize("depth", [100, 400, 800, 950])
def test_deep_but_parseable_extra_never_answers_5xx(rig_with_token, depth):
    text = json.dumps(api_run_payload(extra={})).replace(
        '"extra": {}', '"extra": ' + '{"a": ' * depth + "1" + "}" * depth
    )
    response = post_raw(rig_with_token.client, "/api/runs/", text)
    assert response.status_code < 500, response.content[:300]


# --- 4. NUL in path parameters and query strings ---------------------------------------


@pytest.mark.parametrize("url", ["/api/rigs/a%00b/", "/api/sources/a%00b/"])
def test_a_nul_in_a_path_parameter_is_a_404(api_client, url):
    assert api_client.get(url).status_code == 404


@pytest.mark.parametrize("param", ["rig", "gpu", "model", "build", "workload", "source", "comparison_key"])
def test_a_nul_in_a_list_filter_is_a_400_naming_it(api_client, param):
    assert param in errors_of(api_client.get("/api/runs/", {param: "a\x00b"}))


def test_a_nul_in_a_jobs_filter_is_a_400_naming_it(job):
    rig, _ = job
    assert "rig" in errors_of(rig.client.get("/api/jobs/", {"rig": "a\x00b"}))
    assert "status" in errors_of(rig.client.get("/api/jobs/", {"status": "nope"}))


# --- 5. chunked bodies (no Content-Length) ------------------------------------------


def chunked(client, url: str, raw: bytes, *, terminated: bool = True):
    """POST ``raw`` as a server that de-chunked it presents it: no CONTENT_LENGTH,
    Transfer-Encoding: chunked, and (gunicorn) wsgi.input_terminated."""
    extra = {"CONTENT_LENGTH": "", "HTTP_TRANSFER_ENCODING": "chunked", "wsgi.input": io.BytesIO(raw)}
    if terminated:
        extra["wsgi.input_terminated"] = True
    return client.generic("POST", url, b"", content_type="application/json", **extra)


def test_a_chunked_run_is_read_whole(rig_with_token):
    body = api_run_payload()
    response = chunked(rig_with_token.client, "/api/runs/", json.dumps(body).encode())
    assert response.status_code == 201, response.content[:300]
    assert Run.objects.get().uuid.hex == body["uuid"].replace("-", "")


@override_settings(RIGBOARD_MAX_BODY_BYTES=2000)
def test_a_chunked_body_over_the_limit_is_a_413(rig_with_token):
    errors = errors_of(chunked(rig_with_token.client, "/api/runs/", json.dumps(api_run_payload()).encode()), 413)
    assert "body" in errors
    assert Run.objects.count() == 0


def test_a_chunked_body_a_server_cannot_delimit_is_a_411(rig_with_token):
    response = chunked(rig_with_token.client, "/api/runs/", b"{}", terminated=False)
    assert response.status_code == 411


# --- 6 and 7. strict types -----------------------------------------------------------


@pytest.mark.parametrize("rig", [123, 12.5, True, ["api-rig"]])
def test_a_rig_that_is_not_a_string_is_a_400_naming_it(rig_with_token, rig):
    errors = errors_of(post_json(rig_with_token.client, "/api/runs/", api_run_payload(rig=rig)))
    assert list(errors) == ["rig"]
    assert Run.objects.count() == 0


def test_another_rigs_name_is_still_a_403(rig_with_token):
    response = post_json(rig_with_token.client, "/api/runs/", api_run_payload(rig="someone-else"))
    assert response.status_code == 403


def _with(path: str, value):
    body = api_run_payload()
    node = body
    *parents, last = path.split(".")
    for key in parents:
        node = node[int(key)] if key.isdigit() else node[key]
    node[last] = value
    return body


@pytest.mark.parametrize(
    ("path", "value", "why"),
    [
        ("samples.0.output_ok", "yes", "boolean"),
        ("samples.0.output_ok", 1, "boolean"),
        ("configuration.thinking", "true", "boolean"),
        ("samples.0.flags", [1, 2], "string"),
        ("configuration.extra_args", [True], "string"),
        ("samples.0.stop_reason", 5, "string"),
        ("notes", 5, "string"),
        ("stack.build", 7000, "string"),
        ("workload.version", 2, "string"),
        ("uuid", 123, "UUID string"),
        ("started_at", "2026-11-21T21:00:00", "time zone"),
        ("finished_at", 1763758800, "datetime string"),
        ("samples.0.decode_tokens_per_s_server", "12.5", "number"),
    ],
)
def test_a_loose_type_is_a_400_naming_the_field(rig_with_token, path, value, why):
    errors = errors_of(post_json(rig_with_token.client, "/api/runs/", _with(path, value)))
    key = path if not path.endswith(("flags", "extra_args")) else f"{path}.0"
    assert key in errors, errors
    assert why in " ".join(errors[key])
    assert Run.objects.count() == 0


def test_the_finish_endpoint_wants_an_aware_finished_at(rig_with_token):
    body = open_run(rig_with_token)
    response = post_json(
        rig_with_token.client,
        f"/api/runs/{body['uuid']}/finish/",
        {"status": "finished", "finished_at": "2026-11-21T21:04:00"},
    )
    assert "finished_at" in errors_of(response)


def test_the_job_status_fields_want_strings(job):
    rig, queued = job
    response = post_json(rig.client, f"/api/jobs/{queued.pk}/status/", {"status": "running", "attempt": 5})
    assert list(errors_of(response)) == ["attempt"]

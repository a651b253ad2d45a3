"""POST /api/runs/: submitting a run with its samples and sweep points."""

from __future__ import annotations

import uuid

import pytest

from leaderboard.results.models import Configuration, Run, Sample, Stack, SweepPoint
from tests.fixtures.api import api_run_payload, post_json

pytestmark = pytest.mark.django_db
URL = "/api/runs/"


def test_it_stores_a_run_with_its_samples_and_sweep_points(rig_with_token):
    body = api_run_payload()
    response = post_json(rig_with_token.client, URL, body)
    assert response.status_code == 201, response.json()
    doc = response.json()
    assert doc["uuid"] == body["uuid"]
    assert doc["rig"] == "api-rig"
    assert doc["status"] == "finished"
    assert [s["index"] for s in doc["samples"]] == [1, 2, 3]
    assert [p["ctx_tokens"] for p in doc["sweep_points"]] == [4096, 8192]
    assert doc["summary"]["decode_tokens_per_s_mean"] == pytest.approx(110.0)
    assert doc["summary"]["acceptance_pct"] == pytest.approx(75.0)
    assert len(doc["comparison_key"]) == 64

    run = Run.objects.get(uuid=body["uuid"])
    assert run.rig == rig_with_token.rig
    assert run.stack.build == "b7000-ad27757"
    assert run.model_file.quantization == "UD-Q3_K_XL"
    assert run.configuration.speculative_type == "mtp"
    assert run.workload.name == "space-invaders-html"
    assert run.fingerprint["cpu"] == "Ryzen 9"
    assert run.server_log_tail == "srv  log tail\n"
    assert run.n_samples == 3
    assert run.decode_tokens_per_s_mean == pytest.approx(110.0)
    assert Sample.objects.filter(run=run).count() == 3
    assert SweepPoint.objects.filter(run=run).count() == 2


def test_it_ignores_summaries_and_provenance_sent_by_the_client(rig_with_token):
    body = api_run_payload(
        provenance="reported",
        summary_source="published",
        decode_tokens_per_s_mean=9999.0,
        n_samples=50,
        summary={"decode_tokens_per_s_mean": 9999.0},
    )
    response = post_json(rig_with_token.client, URL, body)
    assert response.status_code == 201
    assert response.json()["provenance"] == "measured"
    assert response.json()["summary"]["decode_tokens_per_s_mean"] == pytest.approx(110.0)
    run = Run.objects.get(uuid=body["uuid"])
    assert run.provenance == "measured"
    assert run.summary_source == "samples"
    assert run.n_samples == 3
    assert run.decode_tokens_per_s_mean == pytest.approx(110.0)


def test_it_returns_the_stored_run_for_a_repeated_uuid_and_creates_nothing(rig_with_token):
    body = api_run_payload()
    first = post_json(rig_with_token.client, URL, body)
    assert first.status_code == 201
    counts = (Run.objects.count(), Sample.objects.count(), SweepPoint.objects.count(), Stack.objects.count())

    changed = api_run_payload(uuid=body["uuid"], notes="a retry with other notes")
    second = post_json(rig_with_token.client, URL, changed)
    assert second.status_code == 200
    assert second.json()["uuid"] == body["uuid"]
    assert second.json()["notes"] == ""
    assert second.json()["samples"] == first.json()["samples"]
    assert (Run.objects.count(), Sample.objects.count(), SweepPoint.objects.count(), Stack.objects.count()) == counts


def test_it_refuses_a_uuid_that_belongs_to_another_rig(rig_with_token, make_rig_with_token):
    body = api_run_payload()
    assert post_json(rig_with_token.client, URL, body).status_code == 201
    other = make_rig_with_token(name="other-rig")
    response = post_json(other.client, URL, api_run_payload(uuid=body["uuid"], rig="other-rig"))
    assert response.status_code == 409
    assert "another rig" in response.json()["errors"]["uuid"][0]
    assert Run.objects.get().rig == rig_with_token.rig


def test_it_refuses_a_run_for_another_rigs_name(rig_with_token, make_rig_with_token):
    make_rig_with_token(name="someone-else")
    response = post_json(rig_with_token.client, URL, api_run_payload(rig="someone-else"))
    assert response.status_code == 403
    message = response.json()["errors"]["detail"][0]
    assert "'api-rig'" in message and "'someone-else'" in message
    assert Run.objects.count() == 0


def test_it_refuses_a_run_for_a_rig_that_does_not_exist(rig_with_token):
    response = post_json(rig_with_token.client, URL, api_run_payload(rig="no-such-rig"))
    assert response.status_code == 403
    assert Run.objects.count() == 0


def test_it_asks_for_a_token_without_one(rig_with_token, api_client):
    response = post_json(api_client, URL, api_run_payload())
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "Token"
    assert "errors" in response.json()
    assert Run.objects.count() == 0


def test_it_refuses_an_unknown_token(rig_with_token, api_client):
    api_client.credentials(HTTP_AUTHORIZATION="Token rb_not-a-real-token")
    response = post_json(api_client, URL, api_run_payload())
    assert response.status_code == 401
    assert response.json() == {"errors": {"detail": ["Invalid token."]}}
    assert Run.objects.count() == 0


def test_it_refuses_a_revoked_token(rig_with_token):
    rig_with_token.token.revoked_at = rig_with_token.token.created_at
    rig_with_token.token.save()
    response = post_json(rig_with_token.client, URL, api_run_payload())
    assert response.status_code == 401
    assert "revoked" in response.json()["errors"]["detail"][0]
    assert Run.objects.count() == 0


def test_it_opens_a_running_run_without_samples(rig_with_token):
    body = api_run_payload(status="running", samples=[], sweep_points=[], finished_at=None)
    response = post_json(rig_with_token.client, URL, body)
    assert response.status_code == 201
    assert response.json()["status"] == "running"
    assert response.json()["summary"]["n_samples"] == 0
    run = Run.objects.get(uuid=body["uuid"])
    assert run.status == "running" and run.finished_at is None and run.samples.count() == 0


def test_it_stores_a_failed_run_with_its_reason_and_samples(rig_with_token):
    body = api_run_payload(status="failed", failure_reason="CUDA out of memory at sample 2")
    body["samples"] = body["samples"][:1]
    response = post_json(rig_with_token.client, URL, body)
    assert response.status_code == 201
    run = Run.objects.get(uuid=body["uuid"])
    assert run.status == "failed"
    assert run.failure_reason == "CUDA out of memory at sample 2"
    assert run.samples.count() == 1


@pytest.mark.parametrize(
    "name",
    [
        "<script>alert('x')</script> & <b>bold</b>",
        "Qwen3.6 — ☃ 模型 🚀 ñ",
        "\"quoted\" 'single' </textarea>",
    ],
)
def test_it_stores_names_with_html_and_unicode_as_given(rig_with_token, name):
    body = api_run_payload()
    body["model_file"]["name"] = name
    body["workload"]["name"] = name
    body["notes"] = name
    response = post_json(rig_with_token.client, URL, body)
    assert response.status_code == 201
    assert response.json()["model_file"]["name"] == name
    run = Run.objects.get(uuid=body["uuid"])
    assert run.model_file.name == name and run.workload.name == name and run.notes == name
    read_back = rig_with_token.client.get(f"{URL}{body['uuid']}/")
    assert read_back.json()["model_file"]["name"] == name
    assert read_back.json()["notes"] == name


def test_two_runs_with_the_same_configuration_share_its_row(rig_with_token):
    post_json(rig_with_token.client, URL, api_run_payload())
    post_json(rig_with_token.client, URL, api_run_payload())
    assert Run.objects.count() == 2
    assert Configuration.objects.count() == 1
    assert Stack.objects.count() == 1


def test_a_token_in_a_session_less_client_needs_no_csrf_token(rig_with_token):
    from rest_framework.test import APIClient

    client = APIClient(enforce_csrf_checks=True)
    client.credentials(HTTP_AUTHORIZATION=f"Token {rig_with_token.raw}")
    response = post_json(client, URL, api_run_payload(uuid=str(uuid.uuid4())))
    assert response.status_code == 201

"""The service as deployed (gunicorn, gthread workers, pooled PostgreSQL
connections) under faults the Django test client cannot show: PostgreSQL
dropping every connection between requests (what a restart does to the pool)
and a chunked request body.

The shared PostgreSQL cluster is not restarted (other suites use it): the drill
ends every backend of this test's own database with pg_terminate_backend(),
which is what the pooled connections see after a restart (tests/fixtures/gunicorn.py)."""

from __future__ import annotations

import json

import pytest
import requests

from leaderboard.jobs.models import BenchmarkJob
from leaderboard.results.models import Run
from tests.fixtures.api import api_run_payload
from tests.fixtures.gunicorn import terminate_backends

pytestmark = pytest.mark.django_db(transaction=True)


def _drill(url: str, token: str) -> list[int]:
    """Warm every thread's pooled connection, drop them all, then read and
    write again; return the status codes after the drop."""
    with requests.Session() as session:
        warm = [session.get(f"{url}/api/runs/", timeout=10).status_code for _ in range(8)]
        assert set(warm) == {200}
        assert terminate_backends() >= 1
        after = [session.get(f"{url}/api/runs/", timeout=10).status_code for _ in range(8)]
        body = api_run_payload()
        posted = session.post(
            f"{url}/api/runs/", json=body, headers={"Authorization": f"Token {token}"}, timeout=10
        ).status_code
    return [*after, posted]


def test_pooled_connections_survive_postgresql_dropping_them(gunicorn_service, rig_with_token):
    url = gunicorn_service()

    codes = _drill(url, rig_with_token.raw)

    assert codes == [200] * 8 + [201]
    assert Run.objects.count() == 1


def test_without_health_checks_the_same_drill_answers_503(gunicorn_service, rig_with_token):
    # Guards the test above: the drill does reach the pooled connections
    # (a dead connection is a 503 "retry shortly" from the API, not a 500).
    url = gunicorn_service(DATABASE_CONN_HEALTH_CHECKS="false")

    codes = _drill(url, rig_with_token.raw)

    assert 503 in codes and 500 not in codes


def test_every_kind_of_token_request_survives_postgresql_dropping_its_connection(gunicorn_service, rig_with_token):
    # One worker thread, so one pooled connection: dropped before each request,
    # the request's first query (the token lookup) meets it dead every time.
    url = gunicorn_service(threads=1)
    job = BenchmarkJob.objects.create(rig=rig_with_token.rig, soft_time_limit_s=60, time_limit_s=90)
    whole = api_run_payload()
    run_uuid = whole["uuid"]
    opened = {**whole, "status": "running", "finished_at": None, "samples": [], "sweep_points": []}
    finish = {"status": "finished", "samples": whole["samples"], "sweep_points": whole["sweep_points"]}
    kinds = [
        ("GET", "/api/jobs/", None, 200),
        ("POST", f"/api/jobs/{job.pk}/status/", {"status": "running", "attempt": "t:1"}, 200),
        ("POST", "/api/runs/", opened, 201),
        ("POST", f"/api/runs/{run_uuid}/samples/", {"samples": whole["samples"][:1]}, 200),
        ("POST", f"/api/runs/{run_uuid}/finish/", finish, 200),
        ("GET", f"/api/runs/{run_uuid}/", None, 200),
        ("POST", "/api/runs/", whole, 200),
    ]
    answers = []
    with requests.Session() as session:
        session.headers["Authorization"] = f"Token {rig_with_token.raw}"
        for method, path, body, expected in kinds:
            # An anonymous read leaves the thread's connection open and pooled.
            assert session.get(f"{url}/api/rigs/", headers={"Authorization": ""}, timeout=10).status_code == 200
            assert terminate_backends() == 1
            response = session.request(method, f"{url}{path}", json=body, timeout=10)
            answers.append((method, path, response.status_code, expected, response.text[:200]))

    assert [a for a in answers if a[2] != a[3]] == []
    assert Run.objects.get().status == "finished" and Run.objects.get().samples.count() == 3


def test_a_chunked_run_is_stored_whole_and_a_chunked_body_over_the_limit_is_a_413(gunicorn_service, rig_with_token):
    url = gunicorn_service(RIGBOARD_MAX_BODY_BYTES="20000")
    headers = {"Authorization": f"Token {rig_with_token.raw}", "Content-Type": "application/json"}
    body = api_run_payload()
    raw = json.dumps(body).encode()
    big = json.dumps(api_run_payload(notes="x" * 30000)).encode()

    # A generator body makes requests send Transfer-Encoding: chunked, no Content-Length.
    stored = requests.post(
        f"{url}/api/runs/", data=(raw[i : i + 500] for i in range(0, len(raw), 500)), headers=headers, timeout=30
    )
    refused = requests.post(
        f"{url}/api/runs/", data=(big[i : i + 500] for i in range(0, len(big), 500)), headers=headers, timeout=30
    )

    assert stored.request.headers.get("Transfer-Encoding") == "chunked"
    assert stored.status_code == 201, stored.text[:300]
    assert stored.json()["uuid"] == body["uuid"]
    assert refused.status_code == 413, refused.text[:300]
    assert "body" in refused.json()["errors"]
    assert Run.objects.count() == 1

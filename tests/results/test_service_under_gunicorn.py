"""The service as deployed (gunicorn, gthread workers, pooled PostgreSQL
connections) under faults the Django test client cannot show: PostgreSQL
dropping every connection between requests (what a restart does to the pool)
and a chunked request body.

The shared PostgreSQL cluster is not restarted (other suites use it): the drill
ends every backend of this test's own database with pg_terminate_backend(),
which is what the pooled connections see after a restart."""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import requests
from django.db import connection

from leaderboard.results.models import Run
from tests.fixtures.api import api_run_payload

pytestmark = pytest.mark.django_db(transaction=True)
ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _database_url() -> str:
    """The URL of the test database pytest-django created (test_<name>)."""
    db = connection.settings_dict
    user = db.get("USER") or "postgres"
    password = f":{db['PASSWORD']}" if db.get("PASSWORD") else ""
    return f"postgres://{user}{password}@{db.get('HOST') or '127.0.0.1'}:{db.get('PORT') or 5432}/{db['NAME']}"


@pytest.fixture
def gunicorn_service() -> Iterator[Callable[..., str]]:
    """Return a function starting gunicorn on the test database (production
    settings, DEBUG off) and returning its base URL; stops them all after."""
    servers: list[subprocess.Popen[bytes]] = []

    def _start(**env_overrides: str) -> str:
        port = _free_port()
        env = {k: v for k, v in os.environ.items() if k not in ("CELERY_BROKER_URL", "REDIS_URL")}
        env.update(
            DATABASE_URL=_database_url(),
            DATABASE_CONN_MAX_AGE="600",
            DEBUG="false",
            SECRET_KEY=secrets.token_urlsafe(50),
            ALLOWED_HOSTS="127.0.0.1",
            SECURE_SSL_REDIRECT="false",
            **env_overrides,
        )
        command = [sys.executable, "-m", "gunicorn", "leaderboard.wsgi:application", f"--bind=127.0.0.1:{port}"]
        command += ["--workers=1", "--worker-class=gthread", "--threads=4", "--log-level=warning"]
        server = subprocess.Popen(command, cwd=ROOT, env=env)  # noqa: S603 - our own interpreter and app
        servers.append(server)
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if server.poll() is not None:
                pytest.fail(f"gunicorn exited with {server.returncode}")
            try:
                with urllib.request.urlopen(f"{url}/api/rigs/", timeout=30):  # noqa: S310 - loopback
                    return url
            except OSError:  # not listening yet (URLError), or still starting
                time.sleep(0.2)
        pytest.fail("gunicorn did not answer within 60 s")

    yield _start
    for server in servers:
        server.terminate()
        server.wait(timeout=20)


def _terminate_backends() -> int:
    """End every other connection to this test's database, as a restart would; return how many."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
        return int(cursor.fetchone()[0])


def _drill(url: str, token: str) -> list[int]:
    """Warm every thread's pooled connection, drop them all, then read and
    write again; return the status codes after the drop."""
    with requests.Session() as session:
        warm = [session.get(f"{url}/api/runs/", timeout=10).status_code for _ in range(8)]
        assert set(warm) == {200}
        assert _terminate_backends() >= 1
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

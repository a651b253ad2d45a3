"""The service side of the benchmarks that post to Rigboard: its production
settings on loopback, manage.py, gunicorn on a free port, the benchmark's own
database with its rig registered, and the command-line options that name it.
(ingest_db.py is the PostgreSQL side.)"""

from __future__ import annotations

import argparse
import http.client
import os
import secrets
import socket
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ingest_db import recreate_database, with_database

ROOT = Path(__file__).resolve().parent.parent
RIG_NAME = "bench-rig"
DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/postgres"

SETUP_RIG = f"""
from leaderboard.results.models import Rig, RigGpu, RigToken
rig = Rig.objects.create(name={RIG_NAME!r}, cpu="benchmark", ram_gb=64, os="Linux")
RigGpu.objects.create(rig=rig, model="RTX 3090", count=1, vram_gb=24, power_limit_w=350)
print(RigToken.issue(rig=rig, label="ingest benchmark")[1])
"""


def postgres_url(value: str) -> str:
    """Return ``value`` if it names a PostgreSQL server; argparse's error otherwise."""
    if not value.startswith(("postgres://", "postgresql://")):
        raise argparse.ArgumentTypeError("DATABASE_URL must point at PostgreSQL")
    return value


def add_database_arguments(parser: argparse.ArgumentParser, *, db_name: str) -> None:
    """Add --database-url (the PostgreSQL server: $DATABASE_URL, else the local
    one) and --db-name (the database the benchmark drops and recreates there)."""
    server_url = os.environ.get("DATABASE_URL", DEFAULT_DATABASE_URL)
    parser.add_argument("--database-url", type=postgres_url, default=server_url)
    parser.add_argument("--db-name", default=db_name)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def service_env(database_url: str, broker_url: str) -> dict[str, str]:
    """Production settings (DEBUG off: no query log), plain HTTP on loopback."""
    env = {k: v for k, v in os.environ.items() if k not in {"CELERY_BROKER_URL", "REDIS_URL"}}
    env.update(
        DATABASE_URL=database_url,
        DEBUG="false",
        SECRET_KEY=secrets.token_urlsafe(50),
        ALLOWED_HOSTS="127.0.0.1",
        SECURE_SSL_REDIRECT="false",
        LOG_LEVEL="WARNING",
        DJANGO_SETTINGS_MODULE="leaderboard.settings",
        # Static files are not collected for the benchmark; WhiteNoise would say so once per worker.
        PYTHONWARNINGS="ignore:No directory at",
        # A capacity benchmark: one token posts far past the per-token write limit.
        RIGBOARD_THROTTLE_RIG_WRITES="off",
    )
    if broker_url:
        env["CELERY_BROKER_URL"] = broker_url
    return env


def manage(env: Mapping[str, str], *args: str, stdin: str = "") -> str:
    """Run ``manage.py *args`` with ``env``; return its stdout, exit with its output if it fails."""
    result = subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT, env=env, input=stdin, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    if result.returncode != 0:
        sys.exit(f"manage.py {args[0]} failed:\n{result.stdout}{result.stderr}")
    return result.stdout


def start_gunicorn(
    env: Mapping[str, str], port: int, *, workers: int, worker_class: str = "gthread", threads: int = 4,
    extra: Sequence[str] = (),
) -> subprocess.Popen[bytes]:  # fmt: skip
    """Start gunicorn on 127.0.0.1:``port`` and return it once GET /api/runs/ answers
    200; exit if it dies or does not answer within 60 s."""
    command = [
        sys.executable,
        "-m",
        "gunicorn",
        "leaderboard.wsgi:application",
        f"--bind=127.0.0.1:{port}",
        f"--workers={workers}",
        f"--worker-class={worker_class}",
        f"--threads={threads}",
        "--log-level=warning",
        *extra,
    ]
    server = subprocess.Popen(command, cwd=ROOT, env=env)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if server.poll() is not None:
            sys.exit(f"gunicorn exited with {server.returncode}")
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            conn.request("GET", "/api/runs/")
            status = conn.getresponse().status
            conn.close()
            if status == 200:
                return server
        except OSError:
            pass
        time.sleep(0.3)
    server.terminate()
    sys.exit("gunicorn did not answer GET /api/runs/ with 200 within 60 s")


@dataclass
class Service:
    """Rigboard under gunicorn on the benchmark's own database, its rig registered."""

    database_url: str  # the benchmark's database
    token: str  # the benchmark rig's
    port: int
    process: subprocess.Popen[bytes]

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)


def start_service(
    server_url: str,
    db_name: str,
    *,
    broker_url: str = "",
    extra_env: Mapping[str, str] | None = None,
    workers: int,
    worker_class: str = "gthread",
    threads: int = 4,
    gunicorn_args: Sequence[str] = (),
) -> Service:
    """Drop and recreate ``db_name`` on the PostgreSQL server ``server_url``, migrate
    it, register the benchmark's rig and start gunicorn on it (``service_env``'s
    settings, then ``extra_env``); return it running."""
    database_url = with_database(server_url, db_name)
    recreate_database(server_url, db_name)
    env = {**service_env(database_url, broker_url), **(extra_env or {})}
    manage(env, "migrate", "--noinput", "-v", "0")
    token = manage(env, "shell", "-c", SETUP_RIG).strip().splitlines()[-1]
    port = free_port()
    process = start_gunicorn(
        env, port, workers=workers, worker_class=worker_class, threads=threads, extra=gunicorn_args
    )
    return Service(database_url=database_url, token=token, port=port, process=process)

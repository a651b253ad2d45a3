"""The embedded default (SQLite, tasks in-process), end to end in a fresh
interpreter: migrate, import the published results, register a rig, submit a run
over the API and read it back, complete an opened run, render the leaderboard.
PostgreSQL-only fast paths (one-statement ingest, prepared lookups) must fall back
cleanly here, since this is what `make demo` serves."""

from __future__ import annotations

from tests.embedded import run_embedded

SCRIPT = r"""
import json, os, sys
import django
django.setup()
from django.core.management import call_command
from django.test import Client
from tests.fixtures.api import api_run_payload

call_command("migrate", verbosity=0)
call_command("import_published", verbosity=0)
from io import StringIO
out = StringIO()
call_command("create_rig", "demo-rig", stdout=out)
token = out.getvalue().strip().splitlines()[-1]
client = Client(HTTP_AUTHORIZATION=f"Token {token}", HTTP_HOST="127.0.0.1")

def post(url, body):
    return client.post(url, json.dumps(body), content_type="application/json")

body = api_run_payload(rig="demo-rig")
created = post("/api/runs/", body)
again = post("/api/runs/", body)
read = client.get(f"/api/runs/{body['uuid']}/")
opened = api_run_payload(rig="demo-rig", status="running", finished_at=None)
opened["samples"] = opened["samples"][:1]
post("/api/runs/", opened)
completed = post("/api/runs/", {**opened, "status": "finished", "samples": api_run_payload()["samples"]})
board = client.get("/?workload=all")  # a measured run beside the published ones: every workload
print(json.dumps({
    "created": created.status_code, "again": again.status_code, "read": read.status_code,
    "same": created.json() == read.json(), "n_samples": read.json()["summary"]["n_samples"],
    "completed": completed.status_code, "completed_status": completed.json()["status"],
    "completed_n": completed.json()["summary"]["n_samples"],
    "board": board.status_code, "board_has_run": b"Qwen3.6-35B-A3B-MTP" in board.content,
}))
"""


def test_the_sqlite_default_ingests_reads_back_and_renders(tmp_path):
    result = run_embedded(SCRIPT, tmp_path)
    assert result == {
        "created": 201,
        "again": 200,
        "read": 200,
        "same": True,
        "n_samples": 3,
        "completed": 200,
        "completed_status": "finished",
        "completed_n": 3,
        "board": 200,
        "board_has_run": True,
    }

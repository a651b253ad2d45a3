"""`make demo`'s data on the embedded default (SQLite), end to end: the Makefile's
own `demo-data` target twice (it must be idempotent), then the pages a visitor of
the demo opens show the runs measured on the development machine, labelled so."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.embedded import ROOT, embedded_env, run_embedded

READ = r"""
import json
import django
django.setup()
from django.test import Client
from leaderboard.results.models import Rig, Run
rig = Rig.objects.get(name="rigboard-dev-vm-demo")
runs = Run.objects.filter(rig=rig)
client = Client(HTTP_HOST="127.0.0.1")
sweep = runs.filter(sweep_points__isnull=False).distinct().get()
game = [f'href="/runs/{r.pk}/"' for r in runs.filter(workload__name="space-invaders-html")]
board, shown = client.get("/").text, client.get("/?failed=on").text
print(json.dumps({
    "runs": runs.count(),
    "measured": sorted(set(runs.values_list("provenance", flat=True))),
    "workloads": sorted(set(runs.values_list("workload__name", flat=True))),
    "rig_page": client.get(f"/rigs/{rig.pk}/").status_code,
    "rig_page_lists": all(f'/runs/{r.pk}/' in client.get(f"/rigs/{rig.pk}/").text for r in runs),
    "board_default_hides_failed_checks": not any(link in board for link in game),
    "board_shows_them_on_request": all(link in shown for link in game),
    "sweep_points": sweep.sweep_points.count(),
    "run_page": client.get(f"/runs/{sweep.pk}/").status_code,
}))
"""


def test_make_demo_data_stores_the_measured_runs_once_and_the_pages_show_them(tmp_path):
    env = embedded_env(tmp_path)
    bin_dir = Path(sys.executable).parent
    make = ["make", "-s", "demo-data", f"BIN={bin_dir}"]
    first = subprocess.run(make, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert first.returncode == 0, first.stderr[-3000:]
    assert "stored as run" in first.stdout and "4 new runs" in first.stdout
    again = subprocess.run(make, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "already stored as run" in again.stdout and "0 new runs" in again.stdout

    result = run_embedded(READ, tmp_path)
    assert result["runs"] == 6  # two runner runs, four llama-bench rows
    assert result["measured"] == ["measured"]
    assert "space-invaders-html" in result["workloads"]
    assert any(name.startswith("llama-bench") for name in result["workloads"])
    assert result["rig_page"] == 200 and result["rig_page_lists"]
    assert result["sweep_points"] == 3 and result["run_page"] == 200
    # Gemma 270M cannot write the game: its runs are marked, not ranked by default.
    assert result["board_default_hides_failed_checks"]
    assert result["board_shows_them_on_request"]

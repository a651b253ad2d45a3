"""The embedded default (SQLite, tasks in-process) in a fresh interpreter, as `make demo`
runs it: the environment, and a script run in it whose last line is JSON."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def embedded_env(tmp_path: Path) -> dict[str, str]:
    """Return this process's environment on an SQLite file in ``tmp_path``, with no broker."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in {"DATABASE_URL", "CELERY_BROKER_URL", "REDIS_URL", "DJANGO_ALLOW_ASYNC_UNSAFE"}
    }
    env.update(
        DATABASE_URL=f"sqlite:///{tmp_path / 'demo.sqlite3'}",
        RIGBOARD_DUMP_DIR=str(tmp_path / "dumps"),
        DJANGO_SETTINGS_MODULE="leaderboard.settings",
        PYTHONPATH=str(ROOT),
    )
    return env


def run_embedded(script: str, tmp_path: Path) -> Any:
    """Run ``script`` in a fresh interpreter on the embedded default; return its last line, parsed."""
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        env=embedded_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])

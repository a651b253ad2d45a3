"""The runner installs alone and a rig owner contributes in four commands.

Builds the runner's distribution (runners/pyproject.toml), installs the wheel into a fresh
venv that cannot see the service's packages (``import django`` fails there), then runs the
installed ``rigboard-runner init --non-interactive``, ``doctor`` and ``run`` against a live
Rigboard on PostgreSQL with the real llama-server and Gemma 3 270M on the CPU: the run is
stored and its page answers. Each command's wall time is printed (``pytest -s`` shows it)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import requests

from leaderboard.results.models import Rig, Run
from tests.fixtures.llama import TEST_THREADS

pytestmark = [pytest.mark.llama, pytest.mark.slow]

REPO_ROOT = Path(__file__).resolve().parents[2]


def sh(
    argv: list[str], *, cwd: Path, env: dict[str, str] | None = None
) -> tuple[subprocess.CompletedProcess[str], float]:
    """Run ``argv`` in ``cwd`` (outside the repository: ``python -c`` would import from it);
    return it and its wall time."""
    started = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, cwd=cwd, env=env, timeout=600, check=False)
    return done, time.perf_counter() - started


def test_the_runner_installs_alone_then_init_doctor_and_run_store_a_run(
    live_server: Any, cpu_rig: tuple[Rig, str], llama_server_bin: Path, gemma_gguf: Path, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    # Built from a copy: an in-place build would leave build/ and *.egg-info inside the package.
    source = tmp_path / "src" / "runners"
    shutil.copytree(REPO_ROOT / "runners", source, ignore=shutil.ignore_patterns("__pycache__", "build", "*.egg-info"))
    built, build_s = sh(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", str(source), "-w", str(tmp_path / "dist")], cwd=home
    )
    assert built.returncode == 0, built.stderr
    (wheel,) = (tmp_path / "dist").glob("rigboard_runner-*.whl")

    venv = tmp_path / "venv"
    made, _ = sh([sys.executable, "-m", "venv", str(venv)], cwd=home)
    assert made.returncode == 0, made.stderr
    bin_dir = venv / "bin"
    installed, install_s = sh([str(bin_dir / "pip"), "install", "-q", str(wheel)], cwd=home)
    assert installed.returncode == 0, installed.stderr
    no_django, _ = sh([str(bin_dir / "python"), "-c", "import django"], cwd=home)
    assert no_django.returncode != 0 and "No module named 'django'" in no_django.stderr
    leaked, _ = sh([str(bin_dir / "python"), "-c", "import leaderboard"], cwd=home)
    assert leaked.returncode != 0  # the service's code is not in the wheel either
    where, _ = sh([str(bin_dir / "python"), "-c", "import runners; print(runners.__file__)"], cwd=home)
    assert where.stdout.startswith(str(venv)), where.stdout + where.stderr

    # The rig's world: only the venv on PATH, a home of its own (caches, spool), no repository.
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(home), "LANG": "C.UTF-8"}
    runner = str(bin_dir / "rigboard-runner")
    config = home / "rig.toml"
    models = home / "models"  # the test cache may hold other GGUF files: a folder with Gemma alone
    models.mkdir()
    (models / gemma_gguf.name).symlink_to(gemma_gguf)
    init, init_s = sh(
        [
            runner,
            "init",
            "--non-interactive",
            "--config",
            str(config),
            "--url",
            live_server.url,
            "--token",
            cpu_rig[1],
            "--server",
            str(llama_server_bin),
            "--models",
            str(models),
            "--threads",
            str(TEST_THREADS),
            "--ctx-size",
            "2048",
        ],  # fmt: skip
        cwd=home,
        env=env,
    )
    assert init.returncode == 0, init.stdout + init.stderr
    assert "the token belongs to rig 'cpu-rig'" in init.stdout

    doctor, doctor_s = sh([runner, "doctor", "--config", str(config)], cwd=home, env=env)
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
    assert re.search(r"^warn power: no power source", doctor.stdout, re.MULTILINE)  # no GPU on this machine
    assert "all 9 checks passed" in doctor.stdout

    run, run_s = sh(
        [runner, "run", "--config", str(config), "--repetitions", "2", "--max-tokens", "16"], cwd=home, env=env
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "energy_j" in run.stderr  # told before the run what it cannot measure
    page = re.search(r"^run page: (http\S+/runs/(\d+)/)$", run.stdout, re.MULTILINE)
    assert page is not None, run.stdout
    stored = Run.objects.get(pk=int(page.group(2)))
    assert stored.rig.name == "cpu-rig" and stored.status == "finished"
    assert stored.samples.count() == 2
    assert requests.get(page.group(1), timeout=30).status_code == 200
    print(
        f"\nwall time (2-core machine shared by seven helpers): build {build_s:.1f} s, install {install_s:.1f} s, "
        f"init {init_s:.1f} s, doctor {doctor_s:.1f} s, run {run_s:.1f} s"
    )
    assert os.path.exists(config)

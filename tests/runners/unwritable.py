"""Directories the OS refuses to write, for the spool fault drills: a full
filesystem (ENOSPC: a tiny tmpfs, filled) and a read-only one (a tmpfs mounted
read-only, or a directory without write permission for a user who is not root).
Mounting needs root (CAP_SYS_ADMIN); where neither way is open the test is skipped."""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


def _mount(target: Path, options: str) -> bool:
    target.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(target)], capture_output=True, check=False
    )
    return done.returncode == 0


def _umount(target: Path) -> None:
    subprocess.run(["umount", "-l", str(target)], capture_output=True, check=False)


@contextlib.contextmanager
def full_dir(target: Path) -> Iterator[Path]:
    """Yield ``target`` as a directory on a full filesystem: writes fail with ENOSPC."""
    if os.geteuid() != 0 or not _mount(target, "size=16k,mode=0777"):
        pytest.skip("an ENOSPC drill needs to mount a tiny tmpfs (root)")
    try:
        with contextlib.suppress(OSError), (target / "filler").open("wb") as filler:
            filler.write(b"\0" * 64 * 1024)
        yield target
    finally:
        _umount(target)


@contextlib.contextmanager
def read_only_dir(target: Path) -> Iterator[Path]:
    """Yield ``target`` as a directory that refuses writes (EROFS as root, EACCES otherwise)."""
    if os.geteuid() != 0:
        target.mkdir(parents=True, exist_ok=True)
        target.chmod(0o555)
        try:
            yield target
        finally:
            target.chmod(0o755)
        return
    if not _mount(target, "size=16k,ro"):
        pytest.skip("a read-only drill as root needs to mount a read-only tmpfs")
    try:
        yield target
    finally:
        _umount(target)

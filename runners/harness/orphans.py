"""A llama-server must not outlive the runner that launched it: it would keep
its memory (on a GPU rig, its VRAM) and skew the next run.

Two guards: on Linux the server gets a parent-death signal (SIGKILL when the
process that launched it dies, even by kill -9); where there is no prctl (macOS,
the BSDs) a small watchdog process does the same (``watch_from_outside``: it kills
the server once its parent, the runner, is gone). And each launched server is
recorded in the runner's state directory (``<cache_dir>/servers/<pid>.json``:
pid, start time, command line, and the runner's pid and start time), so the
next runner's start stops a server whose runner is gone. A record is acted on
only when its process is the very server recorded (same start time and command
line): a pid reused by another process is never signalled. Without /proc the
start time, command line and state come from POSIX ``ps``.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from runners.files import write_atomically

logger = logging.getLogger(__name__)
_PR_SET_PDEATHSIG = 1  # linux/prctl.h


def die_with_parent() -> Any:
    """Return a preexec_fn that makes the child get SIGKILL when this process
    dies (Linux's PR_SET_PDEATHSIG), or None where there is no prctl. Linux sends
    it when the launching *thread* ends: launch from a thread that outlives the
    server (the CLI's and the rig worker's main thread do)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        prctl = libc.prctl
    except (OSError, AttributeError, TypeError):  # no prctl (macOS, BSD), no C library by that name (Windows)
        return None
    parent = os.getpid()

    def _preexec() -> None:
        prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        if os.getppid() != parent:  # the runner died before the prctl took effect
            os.kill(os.getpid(), signal.SIGKILL)

    return _preexec


# Polled by the watchdog; a server outliving its runner by a second does no harm.
_WATCHDOG = """
import os, signal, sys, time
runner, server = int(sys.argv[1]), int(sys.argv[2])
while True:
    try:
        os.kill(server, 0)
    except OSError:
        break
    if os.getppid() != runner:
        try:
            os.killpg(server, signal.SIGKILL)
        except OSError:
            os.kill(server, signal.SIGKILL)
        break
    time.sleep(1.0)
"""


def watch_from_outside(server_pid: int) -> subprocess.Popen[bytes]:
    """Start a watchdog (a child of this process) that kills ``server_pid`` (and its process
    group) once this process is gone: the fallback where ``die_with_parent`` has no prctl.
    It ends by itself when the server does."""
    return subprocess.Popen(  # noqa: S603 - our own interpreter and code
        [sys.executable, "-c", _WATCHDOG, str(os.getpid()), str(server_pid)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _has_proc() -> bool:
    return Path("/proc/self/stat").exists()


def _ps(pid: int, column: str) -> str:
    """Return ``ps -o <column>= -p pid`` (POSIX ps: macOS, the BSDs), '' when it fails."""
    try:
        done = subprocess.run(  # noqa: S603
            ["ps", "-ww", "-o", f"{column}=", "-p", str(pid)], capture_output=True, timeout=10, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return done.stdout.decode("utf-8", "replace").strip() if done.returncode == 0 else ""


def process_start_time(pid: int) -> str:
    """Return the start time of ``pid`` (in clock ticks since boot, from
    /proc/<pid>/stat; without /proc, ``ps``'s start time), '' when there is no such process."""
    if not _has_proc():
        return _ps(pid, "lstart")
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return ""
    # The command name (field 2) may hold spaces and parentheses: split after its last ')'.
    return stat.rsplit(")", 1)[1].split()[19]


def _cmdline(pid: int) -> list[str]:
    if not _has_proc():
        line = _ps(pid, "command")
        return [line] if line else []
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [part.decode("utf-8", "replace") for part in raw.split(b"\0") if part]


def record_server(state_dir: Path, pid: int) -> Path:
    """Record the server ``pid`` (and this runner) in ``state_dir``; return the record's path."""
    state_dir.mkdir(parents=True, exist_ok=True)
    record = {
        "pid": pid,
        "start_time": process_start_time(pid),
        "cmdline": _cmdline(pid),
        "runner_pid": os.getpid(),
        "runner_start_time": process_start_time(os.getpid()),
    }
    path = state_dir / f"{pid}.json"
    write_atomically(path, json.dumps(record))
    return path


def _same_process(pid: int, start_time: str, cmdline: list[str]) -> bool:
    return bool(start_time) and process_start_time(pid) == start_time and _cmdline(pid) == cmdline


def stop_orphans(state_dir: Path) -> list[int]:
    """Stop every server recorded in ``state_dir`` whose runner is gone and
    return their pids. A record is acted on only when its process is the very
    server recorded (same start time and command line): a pid reused by another
    process is left alone. Records of servers gone are removed; a server whose
    runner still runs (another runner on this machine) is left alone."""
    stopped = []
    for path in sorted(state_dir.glob("*.json")) if state_dir.is_dir() else []:
        try:
            record = json.loads(path.read_text())
            pid, start_time, cmdline = int(record["pid"]), str(record["start_time"]), list(record["cmdline"])
            runner_pid, runner_start = int(record["runner_pid"]), str(record["runner_start_time"])
        except (OSError, ValueError, KeyError, TypeError):
            logger.warning("ignoring an unreadable server record %s", path)
            with contextlib.suppress(OSError):
                path.unlink()
            continue
        if runner_start and process_start_time(runner_pid) == runner_start:
            continue  # its runner is alive: its server is not an orphan
        if _same_process(pid, start_time, cmdline):
            logger.warning("stopping llama-server pid %s left running by a runner that died: %s", pid, cmdline)
            _kill_and_wait(pid, start_time)
            stopped.append(pid)
        with contextlib.suppress(OSError):
            path.unlink()
    return stopped


def _kill_and_wait(pid: int, start_time: str, grace_s: float = 10.0) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        if process_start_time(pid) != start_time or _zombie(pid):
            return
        time.sleep(0.1)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signal.SIGKILL)


def _zombie(pid: int) -> bool:
    if not _has_proc():
        state = _ps(pid, "stat")
        return not state or state.startswith("Z")
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True

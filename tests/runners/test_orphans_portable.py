"""A launched server does not outlive its runner where Linux's prctl is missing (macOS,
the BSDs): a watchdog process kills it once the runner is gone; and without /proc the
orphan records read the process's start time, command line and state from ``ps``.
The absent prctl and /proc are simulated (``ctypes`` finding no prctl, ``_has_proc``
answering False); the processes, the kill and ``ps`` are real."""

from __future__ import annotations

import ctypes
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from runners.harness import orphans
from tests.fixtures.waiting import wait_until

ROOT = Path(__file__).resolve().parents[2]


def gone(pid: int) -> bool:
    """True once ``pid`` no longer runs (reaped, or a zombie waiting for its reaper)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return True
    return state == "Z"


def test_without_prctl_there_is_no_preexec_and_the_watchdog_stands_in(monkeypatch: pytest.MonkeyPatch) -> None:
    class NoPrctl:
        def __init__(self, *args: object, **kwargs: object) -> None:
            pass

    monkeypatch.setattr(ctypes, "CDLL", NoPrctl)
    assert orphans.die_with_parent() is None


RUNNER = """
import subprocess, sys, time
from runners.harness.orphans import watch_from_outside
server = subprocess.Popen(["sleep", "300"], start_new_session=True)
watch_from_outside(server.pid)
print(server.pid, flush=True)
time.sleep(300)
"""


def test_the_watchdog_kills_the_server_of_a_runner_killed_outright() -> None:
    runner = subprocess.Popen([sys.executable, "-c", RUNNER], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    assert runner.stdout is not None
    server_pid = int(runner.stdout.readline())
    try:
        assert not gone(server_pid)
        runner.kill()  # SIGKILL: the runner cannot clean up after itself
        runner.wait()
        wait_until(lambda: gone(server_pid), 15, "the watchdog to kill the orphan server")
    finally:
        runner.kill()
        if not gone(server_pid):
            os.kill(server_pid, signal.SIGKILL)


def test_the_watchdog_ends_with_its_server() -> None:
    server = subprocess.Popen(["sleep", "300"], start_new_session=True)
    watchdog = orphans.watch_from_outside(server.pid)
    server.kill()
    server.wait()
    assert watchdog.wait(timeout=15) == 0


def test_without_proc_orphan_records_come_from_ps(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(orphans, "_has_proc", lambda: False)
    server = subprocess.Popen(["sleep", "300"], start_new_session=True)
    try:
        assert orphans.process_start_time(server.pid)  # ps's lstart
        assert orphans._cmdline(server.pid) == ["sleep 300"]
        record = orphans.record_server(tmp_path, server.pid)
        # Its runner is gone: a pid that exited.
        dead = subprocess.Popen(["true"])
        dead.wait()
        data = json.loads(record.read_text())
        data["runner_pid"], data["runner_start_time"] = dead.pid, "Mon Jan  1 00:00:00 2024"
        record.write_text(json.dumps(data))
        assert orphans.stop_orphans(tmp_path) == [server.pid]
        assert server.wait(timeout=15) == -signal.SIGTERM
        assert orphans.process_start_time(dead.pid) == ""
    finally:
        server.kill()
        server.wait()

"""``leaderboard.core.pools.forked_map``: its workers stop with their parent (Ctrl-C on the
process group, or SIGTERM to the parent alone), and it yields every result when nobody stops it.

The pool runs in a child Python process whose tasks sleep for minutes after writing their
pid to a folder; the tests wait for those files, signal, and poll to a deadline."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from leaderboard.core.pools import forked_map

ROOT = Path(__file__).resolve().parent.parent
DEADLINE_S = 60.0

# The script's first line gives it Ctrl-C as a terminal's foreground job has it: a
# process started from one whose SIGINT is ignored (a background job of a shell without
# job control, some test harness's worker) inherits the ignore across exec, and Python
# then never raises KeyboardInterrupt (both clean-clone CI runs of 2026-11-29 timed out so).
SCRIPT = """
import os, signal, sys, time
signal.signal(signal.SIGINT, signal.default_int_handler)
from leaderboard.core.pools import forked_map

def task(item):
    open(os.path.join(sys.argv[1], str(os.getpid())), "w").close()
    time.sleep(600)
    return item

for _ in forked_map(task, range(4), workers=2):
    pass
"""


def _alive(pid: int) -> bool:
    """True while the process exists and is not a zombie waiting to be reaped."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "\nState:\tZ" not in status


def _poll(condition, what: str) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {DEADLINE_S:.0f} s: {what}")
        time.sleep(0.05)


def _start_pool(folder: Path) -> tuple[subprocess.Popen[bytes], list[int]]:
    parent = subprocess.Popen(  # noqa: S603 - this interpreter, a fixed script
        [sys.executable, "-c", SCRIPT, str(folder)],
        cwd=ROOT,
        start_new_session=True,  # its own process group, as a terminal's job
        stderr=subprocess.PIPE,
    )
    _poll(lambda: len(list(folder.iterdir())) == 2, "both workers started a task")
    workers = [int(path.name) for path in folder.iterdir()]
    assert all(_alive(pid) for pid in workers)
    return parent, workers


def _stop_everything(parent: subprocess.Popen[bytes], workers: list[int]) -> None:
    for pid in [parent.pid, *workers]:
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)
    parent.wait(timeout=DEADLINE_S)


@pytest.mark.parametrize(
    "stop",
    [
        pytest.param(lambda parent: os.killpg(parent.pid, signal.SIGINT), id="ctrl-c on the process group"),
        pytest.param(lambda parent: parent.send_signal(signal.SIGTERM), id="sigterm to the parent alone"),
    ],
)
def test_the_workers_stop_with_their_parent(tmp_path: Path, stop) -> None:
    parent, workers = _start_pool(tmp_path)
    try:
        stop(parent)
        parent.wait(timeout=DEADLINE_S)
        _poll(lambda: not any(_alive(pid) for pid in workers), "every worker gone")
        assert parent.returncode != 0
    finally:
        _stop_everything(parent, workers)


def _square(number: int) -> int:
    return number * number


def test_it_yields_every_result_when_nobody_stops_it() -> None:
    assert sorted(forked_map(_square, range(10), workers=2)) == [n * n for n in range(10)]

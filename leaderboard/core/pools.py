"""Forked worker pools that stop when their parent is stopped.

A plain ``multiprocessing`` pool outlives a parent killed with SIGTERM (its workers are
orphaned and go on writing to the database), and on Ctrl-C every worker dies on its own
``KeyboardInterrupt`` while the pool starts new ones. Here:

- the workers ignore SIGINT: Ctrl-C reaches the whole process group, and only the parent
  decides what stops;
- the parent turns SIGTERM into ``SystemExit`` while the pool runs (when it runs in the main
  thread, where signal handlers live), so ``kill`` reaches the same path as Ctrl-C;
- on any exception in the parent the pool is terminated (each worker gets SIGTERM, its
  database session ends with its connection) and joined before the exception goes on.

The callers close their database connections before forking: a connection is not shared
across processes.
"""

from __future__ import annotations

import multiprocessing
import queue
import signal
import threading
from collections.abc import Callable, Iterable, Iterator
from types import FrameType
from typing import Any, TypeVar

T = TypeVar("T")
R = TypeVar("R")

# The one task of the running pool, set before the fork (a closure cannot be pickled).
_TASK: Callable[[Any], Any] | None = None


def _worker_start() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _call(item: Any) -> Any:
    if _TASK is None:
        raise RuntimeError("forked_map sets the task before the pool forks")
    return _TASK(item)


def _exit_on_term(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)


def forked_map(task: Callable[[T], R], items: Iterable[T], *, workers: int) -> Iterator[R]:
    """Yield ``task(item)`` for every item, in the order they finish, from ``workers`` forked
    processes. Ctrl-C, SIGTERM or an exception in the parent terminates the workers before it
    goes on; leaving the loop early does too."""
    global _TASK
    _TASK = task
    # Signal handlers belong to the main thread; a pool started elsewhere keeps the default.
    in_main = threading.current_thread() is threading.main_thread()
    previous_term = signal.signal(signal.SIGTERM, _exit_on_term) if in_main else None
    pool = multiprocessing.get_context("fork").Pool(workers, initializer=_worker_start)
    # Results arrive on a SimpleQueue, not through imap_unordered: a Ctrl-C raised in the
    # parent while it waits inside the pool's own Condition could leave that lock held,
    # and terminate() then waits forever on the thread that needs it (seen once in CI,
    # under load). SimpleQueue.get is one C call: interrupted, it holds nothing.
    done: queue.SimpleQueue[tuple[bool, Any]] = queue.SimpleQueue()
    try:
        pending = 0
        for item in items:
            pool.apply_async(
                _call, (item,), callback=lambda r: done.put((True, r)), error_callback=lambda e: done.put((False, e))
            )
            pending += 1
        for _ in range(pending):
            ok, value = done.get()
            if not ok:
                raise value
            yield value
        pool.close()
    except BaseException:
        pool.terminate()
        raise
    finally:
        pool.join()
        if in_main:
            signal.signal(signal.SIGTERM, previous_term)
        _TASK = None

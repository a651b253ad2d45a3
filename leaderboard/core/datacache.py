"""Values read from the database kept until the data changes: keyed on PostgreSQL's
current snapshot (``conditional.data_version``, the ETag's validator), which moves with
every write and no read. A value stored under one snapshot is served only while that
snapshot holds, so it is never older than what a fresh read would return (it may be
newer: a write that commits while it is computed moves the snapshot, and no later
request asks for the old one). Inside a transaction nothing is kept either: its own
writes do not move the snapshot it reads (``pg_current_snapshot`` holds committed work
only), so a count kept before them would be served after them. Where the database gives
no snapshot (SQLite, the embedded demo), every call computes too.

For what a page recomputes whatever its rows, at a cost that grows with the table:
the leaderboard's workload counts (a count over every ranked run, 63 ms at 100k runs)
and its filter menus."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import TypeVar

from django.core.cache import cache
from django.db import connection

from leaderboard.core.conditional import data_version

T = TypeVar("T")
# An entry outlives its snapshot only until then: the next write makes it unreachable.
KEEP_S = 15 * 60


def while_data_unchanged(name: str, compute: Callable[[], T], *, key: str = "") -> T:
    """Return ``compute()``, kept under ``name`` and ``key`` until the database's snapshot moves."""
    if connection.in_atomic_block:
        return compute()
    version = data_version()
    if version is None:
        return compute()
    cache_key = "rigboard:data:" + hashlib.sha256(f"{name}|{key}|{version}".encode()).hexdigest()
    found = cache.get(cache_key)
    if found is not None:
        return found
    value = compute()
    cache.set(cache_key, value, KEEP_S)
    return value

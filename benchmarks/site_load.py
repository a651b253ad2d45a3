"""Bulk loading for ``site_generate.py`` at millions of runs (issue 40: 10M runs in a time a
developer can wait for):

- the big tables' secondary indexes (those no constraint owns) are dropped before the load
  and built after it, once, instead of being kept up row by row;
- the loading sessions skip the foreign-key triggers (``session_replication_role =
  replica``, a superuser's setting: the generator writes ids it made itself) and do not
  wait for each commit to reach the disk;
- those sessions skip the triggers too, the one that keeps each group's run-to-run spread
  (``RunSpread``) among them, so the spreads are stored again after the load, by the
  statement the trigger's migration fills them with;
- the load is split into fixed chunks of run ids handed to worker processes; each chunk
  draws from its own seed, so the database is the same whatever the worker count.
"""

from __future__ import annotations

import importlib
import sys
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from leaderboard.core.pools import forked_map

BIG_TABLES = ("results_run", "results_sample", "results_sweeppoint")


def secondary_indexes(cursor: Any, tables: tuple[str, ...] = BIG_TABLES) -> list[tuple[str, str]]:
    """Return (name, CREATE INDEX statement) of every index on these tables that no
    constraint (primary key, unique) owns, in name order."""
    cursor.execute(
        """
        SELECT i.indexname, i.indexdef FROM pg_indexes i
        WHERE i.schemaname = current_schema() AND i.tablename = ANY(%s)
          AND NOT EXISTS (
            SELECT 1 FROM pg_constraint c
            WHERE c.conindid = (quote_ident(i.schemaname) || '.' || quote_ident(i.indexname))::regclass
              AND c.contype IN ('p', 'u', 'x'))
        ORDER BY i.indexname
        """,
        [list(tables)],
    )
    return [(name, definition) for name, definition in cursor.fetchall()]


def drop_indexes(cursor: Any, indexes: list[tuple[str, str]]) -> None:
    for name, _ in indexes:
        cursor.execute(f'DROP INDEX "{name}"')


def build_indexes(cursor: Any, indexes: list[tuple[str, str]], *, memory: str = "1GB") -> None:
    """Build these indexes (each in one sort, with ``memory`` of maintenance work memory)."""
    cursor.execute(f"SET maintenance_work_mem = '{memory}'")
    for _, definition in indexes:
        cursor.execute(definition)


def rebuild_spreads(cursor: Any) -> None:
    """Store every group's spread sums again from its runs (``RunSpread``; the loading
    sessions ran without its trigger), with the statement of the migration that made it."""
    migration = importlib.import_module("leaderboard.results.migrations.0010_run_spread_summary")
    cursor.execute("DELETE FROM results_runspread")
    cursor.execute(migration.BACKFILL)


def loading_session(cursor: Any) -> None:
    """Make this session a bulk loader: no foreign-key triggers where allowed, no wait on
    each commit's flush."""
    cursor.execute("SET synchronous_commit = off")
    cursor.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user")
    if cursor.fetchone()[0]:
        cursor.execute("SET session_replication_role = replica")


def run_chunks(job: Callable[[int], dict[str, int]], *, chunks: int, workers: int) -> Counter[str]:
    """Run ``job`` over chunks 0 … chunks-1 in ``workers`` forked processes (each opens its
    own connection); print progress to stderr; return the summed counts. Ctrl-C or SIGTERM
    stops the workers too (``forked_map``)."""
    from django.db import connections

    connections.close_all()
    totals: Counter[str] = Counter()
    began = time.perf_counter()
    step = max(1, chunks // 20)
    for done, counts in enumerate(forked_map(job, range(chunks), workers=workers), start=1):
        totals.update(counts)
        if done % step == 0 or done == chunks:
            elapsed_s = time.perf_counter() - began
            print(
                f"  {done}/{chunks} chunks, {totals['runs']:,} runs in {elapsed_s:.0f} s "
                f"({totals['runs'] / elapsed_s:,.0f} runs/s)",
                file=sys.stderr,
                flush=True,
            )
    return totals

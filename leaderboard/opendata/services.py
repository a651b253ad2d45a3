"""Writing the board's dump: the one entry point of the command and the nightly task."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from django.conf import settings
from django.db import connection, transaction

from leaderboard.opendata.datacard import datacard_build, datacard_markdown
from leaderboard.opendata.tables import TABLES
from leaderboard.opendata.writer import Dump, dump_write


def _card(created_at: datetime, row_counts: dict[str, int]) -> str:
    return datacard_markdown(datacard_build(created_at=created_at, row_counts=row_counts))


def board_dump(*, root: Path | None = None, keep: int | None = None, batch_rows: int = 50_000) -> Dump:
    """Write the public board as a dump under ``root`` (RIGBOARD_DUMP_DIR), keep the newest
    ``keep`` (RIGBOARD_DUMP_KEEP) and return it; see ``writer.dump_write``.

    The tables are read in one read-only transaction, on PostgreSQL at REPEATABLE READ: every
    table sees the same moment (no repetition of a run the runs table lacks), and the cursors
    stream from that snapshot instead of being copied whole at each statement's commit."""
    # Inside a caller's transaction (a test's) the isolation level is the caller's.
    outermost = not connection.in_atomic_block
    with transaction.atomic():
        if outermost and connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        return dump_write(
            root=Path(root or settings.RIGBOARD_DUMP_DIR),
            tables=TABLES,
            datacard=_card,
            keep=keep if keep is not None else settings.RIGBOARD_DUMP_KEEP,
            batch_rows=batch_rows,
        )

"""CSV and JSON exports of exactly the rows a leaderboard view shows: the same
filters, sort, page and price per kWh, through the same LeaderboardRow."""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from typing import Any

from leaderboard.boards.rows import EXPORT_COLUMNS, LeaderboardRow


def _csv_safe(value: Any) -> Any:
    # A cell starting with = + - @ is run as a formula by spreadsheets; a
    # quote in front keeps user text (rig names, models) inert. Numbers stay numbers.
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + value
    return "" if value is None else value


def rows_csv(rows: Sequence[LeaderboardRow]) -> str:
    """Return the rows as CSV with a header of EXPORT_COLUMNS; empty cells for missing figures."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(EXPORT_COLUMNS)
    for row in rows:
        exported = row.export()
        writer.writerow([_csv_safe(exported[name]) for name in EXPORT_COLUMNS])
    return buffer.getvalue()


def rows_json(rows: Sequence[LeaderboardRow], *, meta: dict[str, Any]) -> dict[str, Any]:
    """Return ``{"meta": meta, "columns": [...], "rows": [...]}`` for the rows (null for missing figures)."""
    return {"meta": meta, "columns": EXPORT_COLUMNS, "rows": [row.export() for row in rows]}

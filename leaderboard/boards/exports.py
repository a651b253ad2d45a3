"""CSV, JSON and NDJSON exports of the whole filtered set a leaderboard view
ranks (every page of it): the same filters, sort and price per kWh, through the
same LeaderboardRow. Each writer yields text as the rows come, so an export of
any size streams in bounded memory (``selectors.leaderboard.export_rows``)."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Iterator
from typing import Any

from leaderboard.boards.rows import EXPORT_COLUMNS, EXPORT_NOTES, LeaderboardRow

# Rows written between two yields: small enough to start the download at once,
# large enough that the response is not thousands of tiny chunks.
_FLUSH_ROWS = 200


def csv_safe(value: Any) -> Any:
    """Return ``value`` as a spreadsheet-safe CSV cell: '' for None, and a text
    starting with = + - @ (which a spreadsheet runs as a formula) behind a quote,
    so user text (rig names, models) stays inert. Numbers stay numbers."""
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + value
    return "" if value is None else value


def rows_csv(rows: Iterable[LeaderboardRow]) -> Iterator[str]:
    """Yield the rows as CSV: a header of EXPORT_COLUMNS, then one line a row
    (empty cells for missing figures)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(EXPORT_COLUMNS)
    for count, row in enumerate(rows, start=1):
        exported = row.export()
        writer.writerow([csv_safe(exported[name]) for name in EXPORT_COLUMNS])
        if count % _FLUSH_ROWS == 0:
            yield buffer.getvalue()
            buffer.seek(0)
            buffer.truncate()
    yield buffer.getvalue()


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, allow_nan=False)


def rows_json(rows: Iterable[LeaderboardRow], *, meta: dict[str, Any]) -> Iterator[str]:
    """Yield ``{"columns": [...], "notes": {...}, "rows": [...], "meta": {...}}``: null for
    missing figures; ``meta`` last, with ``total`` (the rows written) added."""
    yield '{"columns": ' + _dumps(EXPORT_COLUMNS) + ', "notes": ' + _dumps(EXPORT_NOTES) + ', "rows": ['
    total = 0
    parts: list[str] = []
    for total, row in enumerate(rows, start=1):  # noqa: B007 - total is read after the loop
        parts.append(("" if total == 1 else ", ") + _dumps(row.export()))
        if len(parts) >= _FLUSH_ROWS:
            yield "".join(parts)
            parts = []
    yield "".join(parts)
    yield '], "meta": ' + _dumps({**meta, "total": total}) + "}\n"


def rows_ndjson(rows: Iterable[LeaderboardRow]) -> Iterator[str]:
    """Yield one JSON object a line per row (the JSON export's row objects, nothing else)."""
    parts: list[str] = []
    for row in rows:
        parts.append(_dumps(row.export()) + "\n")
        if len(parts) >= _FLUSH_ROWS:
            yield "".join(parts)
            parts = []
    yield "".join(parts)

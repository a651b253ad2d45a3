"""Writing a dump: every table as Parquet and CSV, the data card, a manifest.

A dump is a folder ``rigboard-<UTC time>`` under the dump root. It is written
under a hidden name and renamed into place when whole (a rename within one file
system is atomic), then ``LATEST`` is replaced (also a rename) to name it: a
reader sees the previous dump or the new one, never half of one. Rows stream
from the database in chunks (``Table.rows``) and leave as Parquet row groups and
CSV lines a batch at a time, so the writer's memory holds one batch whatever the
board's size. Old dumps beyond ``keep`` are deleted after the new one is in place."""

from __future__ import annotations

import csv
import hashlib
import json
import os
import secrets
import shutil
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

import pyarrow as pa
import pyarrow.parquet as pq

from leaderboard.boards.exports import csv_safe
from leaderboard.opendata.schema import SCHEMA_VERSION, Kind, Table

DUMP_PREFIX = "rigboard-"
LATEST = "LATEST"
MANIFEST = "manifest.json"
DATACARD = "DATACARD.md"
MANIFEST_FORMAT = "rigboard-dump/1"
# A hidden folder left by a writer that died is removed once it is this old
# (a live writer of a 10M-row board is done long before).
STALE_PARTIAL_S = 24 * 60 * 60

_ARROW = {
    Kind.INT: pa.int64(),
    Kind.FLOAT: pa.float64(),
    Kind.TEXT: pa.string(),
    Kind.BOOL: pa.bool_(),
    Kind.TIME: pa.timestamp("us", tz="UTC"),
}


def arrow_schema(table: Table) -> pa.Schema:
    """Return the Parquet schema of ``table``: its columns in order, every one nullable."""
    return pa.schema([pa.field(c.name, _ARROW[c.kind]) for c in table.columns])


@dataclass(frozen=True)
class DumpFile:
    name: str
    table: str  # '' for the data card
    format: str  # parquet, csv or markdown
    rows: int | None
    bytes: int
    sha256: str


@dataclass(frozen=True)
class Dump:
    """A finished dump: its folder, when it was made, its files, and the dumps pruned."""

    path: Path
    created_at: datetime
    files: tuple[DumpFile, ...]
    row_counts: dict[str, int]
    pruned: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return self.path.name


def _csv_cell(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.astimezone(UTC).isoformat()
    if isinstance(value, bool):
        return "true" if value else "false"
    return csv_safe(value)


def _write_batch(rows: Sequence[tuple[Any, ...]], schema: pa.Schema, parquet: Any, out: TextIO) -> None:
    columns = [pa.array([row[i] for row in rows], type=field.type) for i, field in enumerate(schema)]
    parquet.write_batch(pa.RecordBatch.from_arrays(columns, schema=schema))
    csv.writer(out, lineterminator="\n").writerows([_csv_cell(v) for v in row] for row in rows)


def table_write(table: Table, folder: Path, *, batch_rows: int) -> int:
    """Write ``table`` as ``<name>.parquet`` and ``<name>.csv`` in ``folder``, ``batch_rows``
    rows at a time (one Parquet row group each); return the rows written."""
    schema = arrow_schema(table)
    count = 0
    with (
        pq.ParquetWriter(folder / f"{table.name}.parquet", schema, compression="zstd") as parquet,
        (folder / f"{table.name}.csv").open("w", encoding="utf-8", newline="") as out,
    ):
        csv.writer(out, lineterminator="\n").writerow(schema.names)
        batch: list[tuple[Any, ...]] = []
        for row in table.rows(chunk_rows=batch_rows):
            batch.append(row)
            if len(batch) >= batch_rows:
                _write_batch(batch, schema, parquet, out)
                count += len(batch)
                batch = []
        if batch or count == 0:
            # An empty table still gets a file with its schema (one empty row group).
            _write_batch(batch, schema, parquet, out)
            count += len(batch)
    return count


def file_sha256(path: Path) -> str:
    """Return the hex sha256 of the file at ``path``, read 1 MiB at a time."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def _fsync_folder(folder: Path) -> None:
    for path in folder.iterdir():
        with path.open("rb") as handle:
            os.fsync(handle.fileno())
    descriptor = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def _write_replace(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file and a rename: readers see the old or the new text."""
    partial = path.with_name(f".{path.name}.{secrets.token_hex(4)}")
    partial.write_text(text, encoding="utf-8")
    os.replace(partial, path)


def dump_names(root: Path) -> list[str]:
    """Return the names of the finished dumps under ``root``, oldest first."""
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if p.is_dir() and p.name.startswith(DUMP_PREFIX))


def _unique_name(root: Path, created_at: datetime) -> str:
    base = DUMP_PREFIX + created_at.strftime("%Y%m%dT%H%M%SZ")
    name, suffix = base, 2
    while (root / name).exists():
        name, suffix = f"{base}-{suffix}", suffix + 1
    return name


def _prune(root: Path, *, keep: int, now: float) -> tuple[str, ...]:
    names = dump_names(root)
    doomed = names[: max(0, len(names) - keep)]
    for name in doomed:
        shutil.rmtree(root / name, ignore_errors=True)
    for partial in root.iterdir():
        if partial.name.startswith(".") and now - partial.stat().st_mtime > STALE_PARTIAL_S:
            if partial.is_dir():
                shutil.rmtree(partial, ignore_errors=True)
            else:
                partial.unlink(missing_ok=True)
    return tuple(doomed)


def manifest_document(
    *, name: str, created_at: datetime, tables: Iterable[Table], files: Iterable[DumpFile], row_counts: dict[str, int]
) -> dict[str, Any]:
    """Return the manifest of a dump: format, schema version, date, row counts, files with sizes and sha256s."""
    return {
        "format": MANIFEST_FORMAT,
        "schema_version": SCHEMA_VERSION,
        "name": name,
        "created_at": created_at.isoformat().replace("+00:00", "Z"),
        "row_counts": row_counts,
        "tables": {t.name: {"columns": [{"name": c.name, "type": str(c.kind)} for c in t.columns]} for t in tables},
        "files": [
            {"name": f.name, "table": f.table, "format": f.format, "rows": f.rows, "bytes": f.bytes, "sha256": f.sha256}
            for f in files
        ],
    }


def dump_write(
    *,
    root: Path,
    tables: Sequence[Table],
    datacard: Any,
    keep: int,
    batch_rows: int = 50_000,
    now: datetime | None = None,
) -> Dump:
    """Write a dump of ``tables`` under ``root`` and return it. ``datacard(created_at,
    row_counts)`` returns the data card's Markdown. The dump becomes visible (its
    folder, then ``LATEST``) only when every file is written and synced; then dumps
    beyond the newest ``keep`` are deleted. A failure leaves the previous dump in place."""
    if keep < 1:
        raise ValueError(f"keep must be at least 1, got {keep}")
    created_at = (now or datetime.now(UTC)).astimezone(UTC).replace(microsecond=0)
    root.mkdir(parents=True, exist_ok=True)
    partial = root / f".partial-{secrets.token_hex(6)}"
    partial.mkdir()
    try:
        row_counts: dict[str, int] = {}
        for table in tables:
            row_counts[table.name] = table_write(table, partial, batch_rows=batch_rows)
        (partial / DATACARD).write_text(datacard(created_at, row_counts), encoding="utf-8")
        files = []
        for table in tables:
            for fmt in ("parquet", "csv"):
                path = partial / f"{table.name}.{fmt}"
                files.append(
                    DumpFile(path.name, table.name, fmt, row_counts[table.name], path.stat().st_size, file_sha256(path))
                )
        card = partial / DATACARD
        files.append(DumpFile(DATACARD, "", "markdown", None, card.stat().st_size, file_sha256(card)))
        name = _unique_name(root, created_at)
        document = manifest_document(
            name=name, created_at=created_at, tables=tables, files=files, row_counts=row_counts
        )
        (partial / MANIFEST).write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
        _fsync_folder(partial)
        os.rename(partial, root / name)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    _write_replace(root / LATEST, name + "\n")
    pruned = _prune(root, keep=keep, now=time.time())
    return Dump(root / name, created_at, tuple(files), row_counts, pruned)

"""One INSERT statement for a run, its samples and its sweep points (PostgreSQL).

The ORM would send three INSERTs (three round trips) and spend ≈ 3 ms of CPU
compiling SQL and preparing 500-odd values field by field. Here the run, its
samples and its sweep points travel as three JSON parameters, turned back into
rows by ``jsonb_populate_record(set)`` against the tables' own row types. The
statement's text is constant and short, with three parameters, so psycopg caches
its conversion and the server-side binding cursor prepares it once per
connection: PostgreSQL neither parses nor plans it again.
"""

from __future__ import annotations

import datetime
import functools
import json
import uuid
from collections.abc import Sequence
from typing import Any

from django.db import connection, models

from leaderboard.results.models import Run, Sample, SweepPoint
from leaderboard.results.speedups.cursor import prepared_cursor


@functools.cache
def _fields(model: type[models.Model], skip: str = "") -> tuple[models.Field, ...]:
    return tuple(f for f in model._meta.concrete_fields if not f.primary_key and f.name != skip)


@functools.cache
def _auto_dates(model: type[models.Model]) -> tuple[models.Field, ...]:
    return tuple(f for f in _fields(model) if getattr(f, "auto_now", False) or getattr(f, "auto_now_add", False))


def _columns(model: type[models.Model], skip: str = "") -> str:
    quote = connection.ops.quote_name
    return ", ".join(quote(f.column) for f in _fields(model, skip))


def _child_insert(name: str, model: type[models.Model]) -> str:
    quote = connection.ops.quote_name
    table = quote(model._meta.db_table)
    selected = ", ".join(f"r.{quote(f.column)}" for f in _fields(model, skip="run"))
    # Only quoted identifiers and placeholders are formatted in; values are parameters.
    return (
        f"{name} AS (INSERT INTO {table} ({quote('run_id')}, {_columns(model, skip='run')}) "  # noqa: S608
        f"SELECT (SELECT id FROM new_run), {selected} "
        f"FROM jsonb_populate_recordset(NULL::{table}, %s::jsonb) WITH ORDINALITY AS r "
        f"ORDER BY r.ordinality RETURNING id)"
    )


@functools.cache
def _statement() -> str:
    quote = connection.ops.quote_name
    table = quote(Run._meta.db_table)
    selected = ", ".join(f"r.{quote(f.column)}" for f in _fields(Run))
    return (
        f"WITH new_run AS (INSERT INTO {table} ({_columns(Run)}) "  # noqa: S608
        f"SELECT {selected} FROM jsonb_populate_record(NULL::{table}, %s::jsonb) AS r RETURNING id),\n"
        f"{_child_insert('new_samples', Sample)},\n{_child_insert('new_points', SweepPoint)}\n"
        # Ids come from a sequence, row by row in ORDER BY order: sorted ids match the objects' order.
        "SELECT (SELECT id FROM new_run), (SELECT array_agg(id ORDER BY id) FROM new_samples), "
        "(SELECT array_agg(id ORDER BY id) FROM new_points)"
    )


def _json_default(value: Any) -> str:
    if isinstance(value, datetime.datetime | datetime.date):
        return value.isoformat()
    if isinstance(value, uuid.UUID):
        return str(value)
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def _row(obj: models.Model, fields: Sequence[models.Field]) -> dict[str, Any]:
    return {f.column: getattr(obj, f.attname) for f in fields}


def _document(value: Any) -> str:
    # allow_nan=False: PostgreSQL's JSON has no NaN; validated input never holds one.
    return json.dumps(value, default=_json_default, ensure_ascii=False, allow_nan=False)


def applies() -> bool:
    """Return True where the one-statement insert can be used: PostgreSQL through
    psycopg 3, and no save signals connected to the three models (raw SQL sends none)."""
    return connection.vendor == "postgresql" and not any(
        signal.has_listeners(model)
        for signal in (models.signals.pre_save, models.signals.post_save)
        for model in (Run, Sample, SweepPoint)
    )


def run_rows_store(*, run: Run, samples: Sequence[Sample], points: Sequence[SweepPoint]) -> None:
    """Store ``run`` with its samples and sweep points (in the caller's transaction) and
    set their primary keys: in one statement where applies(), else the ORM's way."""
    if applies():
        run_rows_insert(run=run, samples=samples, points=points)
    else:
        run_rows_save(run=run, samples=samples, points=points)


def run_rows_save(*, run: Run, samples: Sequence[Sample], points: Sequence[SweepPoint]) -> None:
    """The plain path, and the reference ``run_rows_insert`` must agree with
    (tests/results/test_speedups.py): the ORM's save and two bulk_creates."""
    run.save()
    Sample.objects.bulk_create(samples)
    SweepPoint.objects.bulk_create(points)


def run_rows_insert(*, run: Run, samples: Sequence[Sample], points: Sequence[SweepPoint]) -> None:
    """INSERT ``run`` with its samples and sweep points in one statement and set
    their primary keys. Call only where applies() is True, inside the caller's
    transaction."""
    for field in _auto_dates(Run):
        field.pre_save(run, add=True)  # sets created_at / updated_at on the object
    sample_fields, point_fields = _fields(Sample, skip="run"), _fields(SweepPoint, skip="run")
    params = [
        _document(_row(run, _fields(Run))),
        _document([_row(s, sample_fields) for s in samples]),
        _document([_row(p, point_fields) for p in points]),
    ]
    with prepared_cursor() as cursor:
        cursor.execute(_statement(), params)
        row = cursor.fetchone()
    assert row is not None  # noqa: S101 - the statement always returns one row
    run_id, sample_ids, point_ids = row
    stored: list[tuple[models.Model, int]] = [
        (run, run_id),
        *zip(samples, sample_ids or (), strict=True),
        *zip(points, point_ids or (), strict=True),
    ]
    for obj, pk in stored:
        obj.pk = pk
        obj._state.adding, obj._state.db = False, connection.alias
    for child in (*samples, *points):
        child.run = run  # type: ignore[attr-defined]  # sets run_id, now that the run has its id

"""Many new runs with their samples and sweep points stored in three statements
(PostgreSQL): the runs in one INSERT, their samples in one, their sweep points
in one, each batch of rows travelling as one JSON parameter turned back into
rows by ``jsonb_populate_recordset`` against the table's own row type, as
``ingest_sql`` does for one run.

The ORM's ``bulk_create`` (``runs_rows_save``, also the path off PostgreSQL or
with save signals connected) is the reference: it stores the same rows, but
spends ≈ 10 µs of CPU per value preparing them (≈ 3 ms per run of 10 samples
and 8 sweep points), more than the whole batch path costs per run. The bulk
service built on it (results/services/bulk.py) is checked against storing the
same runs one by one: tests/results/test_bulk_speedup.py.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

from django.db import connection, models

from leaderboard.results.models import Run, Sample, SweepPoint
from leaderboard.results.speedups.cursor import prepared_cursor
from leaderboard.results.speedups.ingest_sql import _auto_dates, _document, _fields, _row, applies


def runs_rows_store(*, runs: Sequence[Run], samples: Sequence[Sample], points: Sequence[SweepPoint]) -> None:
    """Store the new ``runs`` and their children (built with ``run=`` one of them) in the
    caller's transaction and set the runs' primary keys: in three statements where
    ``ingest_sql.applies()``, else the ORM's way. A uuid already stored raises IntegrityError."""
    if applies():
        runs_rows_insert(runs=runs, samples=samples, points=points)
    else:
        runs_rows_save(runs=runs, samples=samples, points=points)


def runs_rows_save(*, runs: Sequence[Run], samples: Sequence[Sample], points: Sequence[SweepPoint]) -> None:
    """The plain path and the reference: the ORM's ``bulk_create`` of each table."""
    Run.objects.bulk_create(runs)
    for child in (*samples, *points):
        child.run = child.run  # type: ignore[attr-defined]  # sets run_id, now that the run has its id
    Sample.objects.bulk_create(samples)
    SweepPoint.objects.bulk_create(points)


@functools.cache
def _insert(model: type[models.Model], returning: str = "") -> str:
    quote = connection.ops.quote_name
    table = quote(model._meta.db_table)
    columns = ", ".join(quote(f.column) for f in _fields(model))
    selected = ", ".join(f"r.{quote(f.column)}" for f in _fields(model))
    # Only quoted identifiers are formatted in; the rows are one JSON parameter.
    return (
        f"INSERT INTO {table} ({columns}) SELECT {selected} "  # noqa: S608
        f"FROM jsonb_populate_recordset(NULL::{table}, %s::jsonb) AS r{returning}"
    )


def runs_rows_insert(*, runs: Sequence[Run], samples: Sequence[Sample], points: Sequence[SweepPoint]) -> None:
    """INSERT the runs, then their samples and sweep points, one statement per table.
    Call only where ``applies()``, inside the caller's transaction."""
    if not runs:
        return
    for run in runs:
        for field in _auto_dates(Run):
            field.pre_save(run, add=True)  # sets updated_at on the object
    quote = connection.ops.quote_name
    run_fields = _fields(Run)
    with prepared_cursor() as cursor:
        cursor.execute(
            _insert(Run, f" RETURNING {quote('id')}, {quote('uuid')}"),
            [_document([_row(run, run_fields) for run in runs])],
        )
        ids = {str(run_uuid): pk for pk, run_uuid in cursor.fetchall()}
        for run in runs:
            run.pk = ids[str(run.uuid)]
            run._state.adding, run._state.db = False, connection.alias
        for model, children in ((Sample, samples), (SweepPoint, points)):
            if not children:
                continue
            fields = _fields(model)
            for child in children:
                # The run object is already attached; only its new id is copied (the descriptor's
                # __set__ would redo the attachment, a few µs a row).
                child.run_id = child.run.pk  # type: ignore[attr-defined]
            cursor.execute(_insert(model), [_document([_row(child, fields) for child in children])])

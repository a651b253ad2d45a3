"""The ingest's reads, fenced with the other speed-ups because they step past the ORM for speed:
one PostgreSQL round trip for the catalog rows, the rig's GPUs and an
existing run (``ingest_lookup``; other databases take the plain ORM path,
the reference the PostgreSQL one must agree with: tests/results/test_ingest_lookup.py)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.db import connection, models

from leaderboard.results.models import Rig, RigGpu, Run
from leaderboard.results.speedups.cursor import prepared_cursor


@dataclass(frozen=True)
class IngestFound:
    """What the ingest lookup found: catalog rows by natural key (None when missing),
    the rig's GPUs, and the rig of a run that already has the uuid (None if no run has)."""

    catalog: dict[type[models.Model], models.Model | None]
    rig_gpus: tuple[RigGpu, ...]
    existing_rig_id: int | None


def _row_subquery(model: type[models.Model], lookup: Mapping[str, Any], params: list[Any]) -> str:
    quote = connection.ops.quote_name
    conditions = []
    for name, value in lookup.items():
        column = quote(model._meta.get_field(name).column)  # type: ignore[union-attr,arg-type]
        if value is None:
            conditions.append(f"t.{column} IS NULL")
        else:
            conditions.append(f"t.{column} = %s")
            params.append(value)
    where = " AND ".join(conditions) or "TRUE"
    # Unique constraints let NULLs repeat, so "the" row is the oldest match.
    # Only quoted identifiers are formatted in; values are parameters.
    return f"(SELECT row_to_json(t) FROM {quote(model._meta.db_table)} t WHERE {where} ORDER BY t.id LIMIT 1)"  # noqa: S608


def _from_json(model: type[models.Model], row: Mapping[str, Any]) -> models.Model:
    fields = model._meta.concrete_fields
    return model.from_db(connection.alias, [f.attname for f in fields], [row[f.column] for f in fields])


def ingest_lookup(*, rig: Rig, run_uuid: Any, lookups: Mapping[type[models.Model], Mapping[str, Any]]) -> IngestFound:
    """Find the four catalog rows, the rig's GPUs and an existing run with ``run_uuid``
    in one round trip (PostgreSQL; other databases get one query per item).

    The ORM would spend a SAVEPOINT, SELECT and RELEASE per catalog row; this
    costs one statement, and reads rows as they are now (a per-process cache
    could hand out rows deleted since, which deferred foreign keys would only
    reveal at COMMIT)."""
    if connection.vendor != "postgresql":
        return ingest_lookup_orm(rig=rig, run_uuid=run_uuid, lookups=lookups)
    return _ingest_lookup_sql(rig=rig, run_uuid=run_uuid, lookups=lookups)


def ingest_lookup_orm(
    *, rig: Rig, run_uuid: Any, lookups: Mapping[type[models.Model], Mapping[str, Any]]
) -> IngestFound:
    """The plain ORM reading of ``ingest_lookup``: the reference the one-statement
    PostgreSQL path must agree with (tests/results/test_ingest_lookup.py)."""
    return IngestFound(
        catalog={
            model: model._default_manager.filter(**lookup).order_by("pk").first() for model, lookup in lookups.items()
        },
        rig_gpus=tuple(rig.gpus.order_by("position", "id")),
        existing_rig_id=Run.objects.filter(uuid=run_uuid).values_list("rig_id", flat=True).first(),
    )


def _ingest_lookup_sql(
    *, rig: Rig, run_uuid: Any, lookups: Mapping[type[models.Model], Mapping[str, Any]]
) -> IngestFound:
    params: list[Any] = []
    columns = [_row_subquery(model, lookup, params) for model, lookup in lookups.items()]
    quote = connection.ops.quote_name
    columns.append(
        f"(SELECT json_agg(row_to_json(g) ORDER BY g.{quote('position')}, g.id) "  # noqa: S608
        f"FROM {quote(RigGpu._meta.db_table)} g WHERE g.{quote('rig_id')} = %s)"
    )
    columns.append(f"(SELECT r.{quote('rig_id')} FROM {quote(Run._meta.db_table)} r WHERE r.{quote('uuid')} = %s)")  # noqa: S608
    params += [rig.pk, run_uuid]
    with prepared_cursor() as cursor:
        cursor.execute("SELECT " + ", ".join(columns), params)
        row = cursor.fetchone()
    catalog = {
        model: _from_json(model, found) if found is not None else None
        for model, found in zip(lookups, row, strict=False)
    }
    gpus = tuple(_from_json(RigGpu, g) for g in row[len(lookups)] or ())
    return IngestFound(catalog=catalog, rig_gpus=gpus, existing_rig_id=row[len(lookups) + 1])  # type: ignore[arg-type]

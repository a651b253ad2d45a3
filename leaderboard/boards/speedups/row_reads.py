"""The leaderboard rows' four reads (``selectors.leaderboard.rows_by_ids``) as SQL
compiled once per connection from the ORM's own querysets, with the run ids bound
as one array (``= ANY(%s)``) and sent through the prepared cursor
(``results/speedups/cursor.py``), so PostgreSQL plans the nine-table select once
per connection too.

Why: building and compiling the four querysets cost ~4 ms per call whatever the
number of rows (5.1 ms of the board's 23.1 ms of CPU at 100k runs, 4.0 of the run
page's 26.9: benchmarks/README.md, thirtieth session), and every board, rig, run,
source page and export chunk makes the call. ``pk__in=ids`` gives a different SQL
text for every number of ids; one array parameter gives one text.

Plain reference: ``row_parts_orm`` (also the path off PostgreSQL);
tests/boards/test_row_reads_speedup.py checks the two agree on a varied set of
runs. The SQL is the ORM's, so a column added to ``rows.ROW_VALUES`` or a field
renamed changes both paths alike."""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connection, connections
from django.db.models import F, Lookup, Max, Q, QuerySet
from django.db.models.sql.compiler import SQLCompiler

from leaderboard.boards.rows import ROW_VALUES
from leaderboard.results.models import RigGpu, Run, RunBoundShare, Sample
from leaderboard.results.speedups.cursor import prepared_cursor


@dataclass(frozen=True)
class RowParts:
    """What a page's leaderboard rows are built from: each run's ``ROW_VALUES`` by id,
    its samples' peak VRAM (runs with samples only), its stored share of the bound
    (runs with a share row only), and its rig's GPUs as (model, count) in position
    order, by rig id."""

    values: dict[int, dict[str, Any]]
    peak_vram_mib: dict[int, float | None]
    shares: dict[int, float | None]
    gpus: dict[int, list[tuple[str, int]]] = field(default_factory=dict)


def row_parts(ids: list[int]) -> RowParts:
    """Return the parts of the rows of ``ids`` (unknown ids are left out): four queries
    on PostgreSQL (three when no id is a run), none for no ids."""
    if not ids:
        return RowParts({}, {}, {}, {})
    if connection.vendor != "postgresql":
        return row_parts_orm(ids)
    statements = _statements()
    values = {v["pk"]: v for v in statements.runs.dicts(ids)}
    rig_ids = sorted({v["rig_id"] for v in values.values()})
    return _parts(
        values,
        statements.peak_vram.rows(ids),
        statements.shares.rows(ids),
        statements.gpus.rows(rig_ids) if rig_ids else [],
    )


def row_parts_orm(ids: list[int]) -> RowParts:
    """The plain ORM reading of ``row_parts``: the reference the compiled statements
    must agree with, and the path on databases other than PostgreSQL."""

    def among(name: str, values: Any) -> Q:
        return Q(**{f"{name}__in": values})

    values = {v["pk"]: v for v in _runs(among("pk", ids))}
    rig_ids = {v["rig_id"] for v in values.values()}
    return _parts(
        values, _peak_vram(among("run_id", ids)), _shares(among("run_id", ids)), _gpus(among("rig_id", rig_ids))
    )


# The four reads, each defined once; ``where`` picks their rows: ``__in`` on the plain
# path, ``AnyOf`` (one array parameter) where they are compiled once.
def _runs(where: Any) -> QuerySet[Any, Any]:
    return Run.objects.filter(where).order_by().values(*ROW_VALUES)


def _peak_vram(where: Any) -> QuerySet[Any, Any]:
    return (
        Sample.objects.filter(where)
        .order_by()
        .values("run_id")
        .annotate(vram=Max("vram_peak_mib"))
        .values_list("run_id", "vram")
    )


def _shares(where: Any) -> QuerySet[Any, Any]:
    # Its own query, by primary key: joined into the runs' (nine tables, past the
    # planner's join_collapse_limit) it read the whole share table (a hash join).
    return RunBoundShare.objects.filter(where).order_by().values_list("run_id", "decode_share")


def _gpus(where: Any) -> QuerySet[Any, Any]:
    return RigGpu.objects.filter(where).order_by("rig_id", "position", "id").values_list("rig_id", "model", "count")


def _parts(values: dict[int, dict[str, Any]], peak_vram: Any, shares: Any, gpu_rows: Any) -> RowParts:
    gpus: dict[int, list[tuple[str, int]]] = {}
    for rig_id, model, count in gpu_rows:
        gpus.setdefault(rig_id, []).append((model, count))
    return RowParts(values, dict(peak_vram), dict(shares), gpus)


class AnyOf(Lookup):  # type: ignore[type-arg]
    """``lhs = ANY(%s)`` with the list as one array parameter, so the SQL text is the
    same whatever the number of values (``__in`` writes one placeholder per value)."""

    lookup_name = "any_of"
    prepare_rhs = False

    def get_db_prep_lookup(self, value: Any, connection: Any) -> tuple[str, list[Any]]:
        return "%s", [list(value)]

    def as_sql(self, compiler: Any, connection: Any) -> tuple[str, list[Any]]:
        lhs, lhs_params = self.process_lhs(compiler, connection)
        rhs, rhs_params = self.process_rhs(compiler, connection)
        return f"{lhs} = ANY({rhs})", [*lhs_params, *rhs_params]


@dataclass(frozen=True)
class _Statement:
    """A queryset compiled once: its SQL, its one array parameter's place, and the
    compiler whose converters turn database values into the ORM's (none for today's
    columns, kept so a converted field added later reads as the ORM reads it)."""

    sql: str
    names: tuple[str, ...]
    compiler: SQLCompiler
    converters: dict[int, Any]

    @classmethod
    def of(cls, queryset: QuerySet[Any, Any]) -> _Statement:
        compiler = queryset.query.get_compiler(using=queryset.db)
        sql, params = compiler.as_sql()
        if list(params) != [[]]:
            raise ValueError(f"a compiled row read takes one array parameter, not {params!r}")
        query = queryset.query
        names = (*query.extra_select, *query.values_select, *query.annotation_select)
        converters = compiler.get_converters([s[0] for s in compiler.select[: compiler.col_count]])
        return cls(sql, names, compiler, converters)

    def rows(self, values: list[int]) -> list[tuple[Any, ...]]:
        with prepared_cursor() as cursor:
            cursor.execute(self.sql, [values])
            fetched = cursor.fetchall()
        if self.converters:
            return [tuple(row) for row in self.compiler.apply_converters(fetched, self.converters)]
        return fetched

    def dicts(self, values: list[int]) -> list[dict[str, Any]]:
        return [dict(zip(self.names, row, strict=True)) for row in self.rows(values)]


@dataclass(frozen=True)
class _Statements:
    runs: _Statement
    peak_vram: _Statement
    shares: _Statement
    gpus: _Statement


# One set per connection object (each thread has its own): a compiler keeps the
# connection it compiled for, and its converters are that connection's.
_compiled: weakref.WeakKeyDictionary[Any, _Statements] = weakref.WeakKeyDictionary()


def _statements() -> _Statements:
    wrapper = connections[DEFAULT_DB_ALIAS]
    found = _compiled.get(wrapper)
    if found is None:
        found = _compiled[wrapper] = _Statements(
            runs=_Statement.of(_runs(AnyOf(F("pk"), []))),
            peak_vram=_Statement.of(_peak_vram(AnyOf(F("run_id"), []))),
            shares=_Statement.of(_shares(AnyOf(F("run_id"), []))),
            gpus=_Statement.of(_gpus(AnyOf(F("rig_id"), []))),
        )
    return found

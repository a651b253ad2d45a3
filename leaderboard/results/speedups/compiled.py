"""Reads by a list of ids compiled once per connection from the ORM's own querysets:
the ids bound as one array (``= ANY(%s)``, ``AnyOf``) so one SQL text serves every
number of ids, and sent through the prepared cursor (``cursor.py``) so PostgreSQL
plans it once per connection too (after ``DATABASE_PREPARE_THRESHOLD`` runs: until the
thirty-fourth session psycopg prepared nothing, Django leaving its threshold at never).

Why: a page's reads by the ids of its rows (the board's rows, their timeline links)
were built and compiled by Django on every request, ~1-4 ms each whatever the number
of rows (benchmarks/README.md, thirtieth and thirty-first sessions); ``pk__in=ids``
gives a different SQL text for every number of ids.

Each user keeps its plain ORM reading (``__in``) as its reference and the path off
PostgreSQL, with a test that the two agree; the SQL is the ORM's, so a field renamed
or added changes both paths alike."""

from __future__ import annotations

import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connections
from django.db.models import Lookup, QuerySet
from django.db.models.sql.compiler import SQLCompiler

from leaderboard.results.speedups.cursor import prepared_cursor


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
class Statement:
    """A queryset compiled once: its SQL, its one array parameter's place, and the
    compiler whose converters turn database values into the ORM's (so a converted
    field reads as the ORM reads it)."""

    sql: str
    names: tuple[str, ...]
    compiler: SQLCompiler
    converters: dict[int, Any]

    @classmethod
    def of(cls, queryset: QuerySet[Any, Any]) -> Statement:
        compiler = queryset.query.get_compiler(using=queryset.db)
        sql, params = compiler.as_sql()
        if list(params) != [[]]:
            raise ValueError(f"a compiled read takes one array parameter, not {params!r}")
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


# One dict of statements per connection object (each thread has its own): a compiler
# keeps the connection it compiled for, and its converters are that connection's.
_compiled: weakref.WeakKeyDictionary[Any, dict[str, Statement]] = weakref.WeakKeyDictionary()


def compiled_once(name: str, queryset: Callable[[], QuerySet[Any, Any]]) -> Statement:
    """Return the statement called ``name`` on this thread's connection, compiling
    ``queryset()`` (whose one parameter is an ``AnyOf`` of an empty list) the first time."""
    statements = _compiled.setdefault(connections[DEFAULT_DB_ALIAS], {})
    found = statements.get(name)
    if found is None:
        found = statements[name] = Statement.of(queryset())
    return found

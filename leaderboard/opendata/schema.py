"""What a dump's table is: its columns (name with its unit, type, meaning) and the
public rows it holds, read in chunks. The writer, the data card and the tests
read the tables through these dataclasses only."""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.db.models import QuerySet

# Bumped when a column is renamed, removed or changes type (adding one is not a break).
SCHEMA_VERSION = 1


class Kind(enum.StrEnum):
    """A column's type, as Parquet stores it (the CSV writes the same value as text)."""

    INT = "int64"
    FLOAT = "float64"
    TEXT = "string"
    BOOL = "bool"
    TIME = "timestamp (UTC)"


@dataclass(frozen=True)
class Column:
    """One column: ``name`` carries its unit (``_tokens_per_s``, ``_ms``, ``_w``…);
    ``field`` is the ORM path (or paths, for a value computed from several) it is read
    from, the name itself when empty."""

    name: str
    kind: Kind
    description: str
    field: str | tuple[str, ...] = ""

    @property
    def fields(self) -> tuple[str, ...]:
        if isinstance(self.field, tuple):
            return self.field
        return (self.field or self.name,)


# A column's value from its field values; per dump, since some read a lookup made first.
Converters = Mapping[str, Callable[..., Any]]


@dataclass(frozen=True)
class Table:
    """One table of the dump: ``queryset()`` is every public row (the one public rule
    applied), ``converters()`` the columns computed in Python rather than read as stored."""

    name: str
    description: str
    columns: tuple[Column, ...]
    queryset: Callable[[], QuerySet[Any]]
    converters: Callable[[], Converters] = dict

    def rows(self, *, chunk_rows: int) -> Iterator[tuple[Any, ...]]:
        """Yield every row as a tuple in column order, ordered by primary key, read
        ``chunk_rows`` at a time (a server-side cursor on PostgreSQL): memory holds one chunk."""
        fields = list(dict.fromkeys(f for column in self.columns for f in column.fields))
        where = {f: i for i, f in enumerate(fields)}
        converters = self.converters()
        plan: list[tuple[Callable[..., Any] | None, Sequence[int]]] = [
            (converters.get(column.name), [where[f] for f in column.fields]) for column in self.columns
        ]
        values = self.queryset().order_by("pk").values_list(*fields)
        for raw in values.iterator(chunk_size=chunk_rows):
            yield tuple(raw[idx[0]] if fn is None else fn(*(raw[i] for i in idx)) for fn, idx in plan)

"""The leaderboard rows' four reads (``selectors.leaderboard.rows_by_ids``) as SQL
compiled once per connection from the ORM's own querysets
(``results/speedups/compiled.py``: the run ids bound as one array, the prepared
cursor), so PostgreSQL plans the nine-table select once per connection too.

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

from dataclasses import dataclass, field
from typing import Any

from django.db import connection
from django.db.models import F, Max, Q, QuerySet

from leaderboard.boards.rows import ROW_VALUES
from leaderboard.results.models import RigGpu, Run, RunBoundShare, Sample
from leaderboard.results.speedups.compiled import AnyOf, Statement, compiled_once


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
    values = {v["pk"]: v for v in _statement("runs", _runs, "pk").dicts(ids)}
    rig_ids = sorted({v["rig_id"] for v in values.values()})
    return _parts(
        values,
        _statement("peak_vram", _peak_vram, "run_id").rows(ids),
        _statement("shares", _shares, "run_id").rows(ids),
        _statement("gpus", _gpus, "rig_id").rows(rig_ids) if rig_ids else [],
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


def _statement(name: str, read: Any, column: str) -> Statement:
    return compiled_once(f"boards.row_reads.{name}", lambda: read(AnyOf(F(column), [])))

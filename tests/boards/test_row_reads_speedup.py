"""The leaderboard rows' compiled reads (leaderboard/boards/speedups/row_reads.py)
return what their plain ORM reference returns, on a varied set of runs: measured
and reported, with and without samples' VRAM, a rig mixing GPU models, a run with
no share row, unknown and repeated ids. The SQL is one text whatever the number of
ids, which is what lets PostgreSQL prepare it."""

from __future__ import annotations

import dataclasses

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from leaderboard.boards.selectors.leaderboard import rows_by_ids
from leaderboard.boards.speedups.row_reads import RowParts, row_parts, row_parts_orm
from leaderboard.results.models import Run, RunBoundShare, Sample

pytestmark = pytest.mark.django_db


@pytest.fixture
def varied_ids(board_run, reported_run) -> list[int]:
    mixed = board_run(rig="mixed", gpus=[("RTX 3090", 2), ("RTX 3090 Ti", 1)], model="m-mixed")
    plain = board_run(rig="plain", model="m-plain", spec="none", draft=None, energy_j=None)
    reported = reported_run(decode=42.0)
    no_share = board_run(rig="plain", model="m-no-share", architecture="dense")
    RunBoundShare.objects.filter(run_id=no_share.pk).delete()
    Sample.objects.filter(run_id=mixed.pk).update(vram_peak_mib=21_900)
    Sample.objects.filter(run_id=mixed.pk, index=1).update(vram_peak_mib=23_552)
    unknown = Run.objects.order_by("-pk").values_list("pk", flat=True).first() + 1000
    return [plain.pk, mixed.pk, unknown, reported.pk, no_share.pk, mixed.pk]


def test_the_comparison_can_tell_two_results_apart(varied_ids: list[int]) -> None:
    before = row_parts_orm(varied_ids)
    Sample.objects.filter(run_id=varied_ids[1], index=2).update(vram_peak_mib=30_000)

    assert row_parts_orm(varied_ids) != before


def test_the_compiled_reads_agree_with_the_orm(varied_ids: list[int]) -> None:
    fast, plain = row_parts(varied_ids), row_parts_orm(varied_ids)

    assert fast == plain
    # The cases the set was made for are in it, so agreeing means something.
    assert len(plain.values) == 4 and varied_ids[2] not in plain.values
    assert plain.peak_vram_mib[varied_ids[1]] == 23_552
    assert varied_ids[4] not in plain.shares and varied_ids[0] in plain.shares
    assert plain.gpus[plain.values[varied_ids[1]]["rig_id"]] == [("RTX 3090", 2), ("RTX 3090 Ti", 1)]


def test_the_rows_agree_with_rows_built_from_the_orm(varied_ids: list[int]) -> None:
    fast = rows_by_ids(varied_ids, usd_per_kwh=0.3)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("leaderboard.boards.selectors.leaderboard.row_parts", row_parts_orm)
        plain = rows_by_ids(varied_ids, usd_per_kwh=0.3)

    assert [dataclasses.asdict(r) for r in fast] == [dataclasses.asdict(r) for r in plain]
    assert [r.run_id for r in fast] == [i for i in varied_ids if i != varied_ids[2]]


def test_one_sql_text_serves_every_number_of_ids(varied_ids: list[int]) -> None:
    with CaptureQueriesContext(connection) as one:
        row_parts(varied_ids[:1])
    with CaptureQueriesContext(connection) as many:
        row_parts(varied_ids)

    assert len(one) == len(many) == 4
    # The logged SQL has the array spelled in; the text before it is the statement's.
    assert [q["sql"].partition("ANY(")[0] for q in one] == [q["sql"].partition("ANY(")[0] for q in many]
    assert all("= ANY(" in q["sql"] for q in many)


def test_no_ids_cost_no_query() -> None:
    with CaptureQueriesContext(connection) as captured:
        parts = row_parts([])

    assert parts == RowParts({}, {}, {}, {}) and len(captured) == 0


def test_the_server_prepares_the_statement_after_the_threshold(varied_ids: list[int]) -> None:
    # DATABASE_PREPARE_THRESHOLD (5 by default): without it psycopg prepares nothing and
    # PostgreSQL plans the nine-table read on every call (1.8 ms of its 2 at 100k runs).
    threshold = connection.settings_dict["OPTIONS"]["prepare_threshold"]
    assert threshold is not None and threshold > 0
    prepared = "SELECT count(*) FROM pg_prepared_statements WHERE statement LIKE %s"

    def count() -> int:
        with connection.cursor() as cursor:
            cursor.execute(prepared, ['%"results_run"."id" = ANY(%'])
            return cursor.fetchone()[0]

    for _ in range(threshold + 1):
        row_parts(varied_ids)

    # Prepared on this connection now (or already, by an earlier test on it).
    assert count() == 1

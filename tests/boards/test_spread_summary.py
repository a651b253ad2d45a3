"""The run-to-run spread sums PostgreSQL keeps per rig × configuration group
(``RunSpread``, kept by the trigger of results/0010_run_spread_summary) agree with
the plain aggregate over the runs (``noise.spread_rows_from_runs``) after every kind
of write to a run: the single intake's one-statement insert, the bulk intake, a run
opened then finished, an abort, a summary that changes source, a run moved to another
group, a delete. The comparison first shows it can tell two sets of sums apart."""

from __future__ import annotations

import math
from typing import Any

import pytest
from django.db import connection
from django.test import Client

from leaderboard.boards.selectors.noise import rig_spreads, spread_rows_from_runs, spread_rows_kept
from leaderboard.results.api.payloads import payload_checked
from leaderboard.results.models import CONFIGURATION_GROUP, Run, RunSpread, RunStatus, SummarySource
from leaderboard.results.services import bulk
from runners.delivery import schema
from tests.fixtures.api import api_run_payload
from tests.fixtures.boards import samples_from

pytestmark = pytest.mark.django_db

FLOATS = ("mean", "sumsq", "sum_logs", "sum_log_squares", "lo", "hi")


def _measured() -> Any:
    return Run.objects.filter(
        status=RunStatus.FINISHED, summary_source=SummarySource.SAMPLES, decode_tokens_per_s_median__isnull=False
    ).order_by()


def differences(kept: list[dict[str, Any]], reference: list[dict[str, Any]]) -> list[str]:
    """Return what differs between two lists of spread rows (floats to 1e-9 relative:
    the database may add a group's medians in another order)."""
    if len(kept) != len(reference):
        return [f"{len(kept)} rows against {len(reference)}"]
    found = []
    for a, b in zip(kept, reference, strict=True):
        for name, value in b.items():
            other = a[name]
            same = (
                (other is None) == (value is None)
                if other is None or value is None
                else math.isclose(other, value, rel_tol=1e-9, abs_tol=1e-12)
                if name in FLOATS
                else other == value
            )
            if not same:
                found.append(f"{name}: {other!r} against {value!r} in group {[b[f] for f in CONFIGURATION_GROUP]}")
    return found


def check_every_rig() -> None:
    """Assert the kept sums are the runs' own, for every rig and every group (one-run groups too)."""
    for rig_id in set(Run.objects.values_list("rig_id", flat=True)):
        kept = spread_rows_kept(rig_id=rig_id, limit=1000)
        reference = spread_rows_from_runs(_measured().filter(rig_id=rig_id), limit=1000)
        assert differences(kept, reference) == [], rig_id
    groups = set(_measured().values_list(*CONFIGURATION_GROUP).distinct())
    assert set(RunSpread.objects.values_list(*CONFIGURATION_GROUP)) == groups
    assert RunSpread.objects.filter(n=0).count() == 0


def _validated(*tps_and_ctx: tuple[list[float], int]) -> dict[int, dict[str, Any]]:
    datas = {}
    for index, (tps, ctx) in enumerate(tps_and_ctx):
        body = api_run_payload(samples=samples_from(tps, draft=None, energy_j=None), sweep_points=[])
        body["configuration"]["ctx_size"] = ctx
        data, problems = payload_checked(schema.RunCreateInput, body)
        assert data is not None, problems
        datas[index] = data
    return datas


def test_the_comparison_tells_two_sets_of_sums_apart(board_run) -> None:
    assert connection.vendor == "postgresql"
    for tps in ([100.0, 101.0], [104.0, 103.0], [99.0, 98.0]):
        run = board_run(tps=tps)
    reference = spread_rows_from_runs(_measured().filter(rig_id=run.rig_id), limit=10)
    kept = spread_rows_kept(rig_id=run.rig_id, limit=10)
    assert len(reference) == 1 and reference[0]["n"] == 3
    assert differences(kept, reference) == []
    off_by_a_little = [{**row, "sum_logs": row["sum_logs"] * (1 + 1e-6)} for row in kept]
    assert differences(off_by_a_little, reference) != []
    assert differences([{**row, "n": 2} for row in kept], reference) != []
    assert differences([], reference) != []


def test_the_kept_sums_follow_every_kind_of_write(board_run, rig_with_token) -> None:
    # The single intake: three groups on one rig, one on another.
    first = board_run(tps=[100.0, 101.0])
    board_run(tps=[110.0, 111.0])
    board_run(tps=[50.0], ctx=4096)
    board_run(tps=[51.0, 52.0], ctx=4096)
    board_run(tps=[70.0], rig="other-rig")
    opened = board_run(tps=[80.0], run={"status": "running"}, samples=[])
    check_every_rig()

    # The bulk intake (speedups/bulk_sql.py): one statement for many runs.
    rig = rig_with_token.rig
    outcomes = bulk.runs_store_bulk(rig=rig, datas=_validated(([60.0, 61.0], 4096), ([62.0], 4096), ([30.0], 8192)))
    assert [o.status_code for o in outcomes.values()] == [201, 201, 201]
    check_every_rig()
    assert RunSpread.objects.get(rig=rig, configuration__ctx_size=4096).n == 2

    # A run finished later, one aborted, one whose summary becomes the article's.
    Run.objects.filter(pk=opened.pk).update(
        status=RunStatus.FINISHED, summary_source=SummarySource.SAMPLES, decode_tokens_per_s_median=81.0
    )
    check_every_rig()
    Run.objects.filter(pk=first.pk).update(status=RunStatus.ABORTED)
    check_every_rig()
    Run.objects.filter(rig=rig).exclude(configuration__ctx_size=8192).update(summary_source=SummarySource.PUBLISHED)
    check_every_rig()

    # A run moved to another group, a change that touches no spread, deletes.
    other = Run.objects.filter(rig__name="other-rig").first()
    assert other is not None
    Run.objects.filter(pk=other.pk).update(rig_id=first.rig_id)
    Run.objects.update(notes="read again")
    check_every_rig()
    Run.objects.filter(pk=first.pk).delete()
    Run.objects.filter(configuration__ctx_size=4096).delete()
    check_every_rig()
    Run.objects.all().delete()
    assert RunSpread.objects.count() == 0


def test_the_rig_page_reads_the_kept_sums_and_shows_the_runs_own_spread(client: Client, board_run) -> None:
    runs = [board_run(tps=[tps, tps + 1.0]) for tps in (100.0, 104.0, 96.0)]
    rig_id = runs[0].rig_id
    # The page reads the kept row: change it and the page follows (then put it back).
    spreads = rig_spreads(rig_id=rig_id)
    assert [s.n_runs for s in spreads] == [3]
    RunSpread.objects.filter(rig_id=rig_id).update(n=7)
    assert [s.n_runs for s in rig_spreads(rig_id=rig_id)] == [7]
    RunSpread.objects.filter(rig_id=rig_id).update(n=3)
    assert [s.n_runs for s in rig_spreads(rig_id=rig_id)] == [3]
    assert client.get(f"/rigs/{rig_id}/").status_code == 200


def test_the_compare_pages_spreads_are_the_kept_sums_of_exactly_its_groups(board_run) -> None:
    from leaderboard.boards.selectors.noise import _of_groups, group_key, spread_rows_kept_for, spreads_for

    compared = [board_run(tps=[tps, tps + 1.0]) for tps in (100.0, 104.0, 96.0)]
    board_run(tps=[50.0, 51.0], ctx=4096)
    board_run(tps=[52.0, 53.0], ctx=4096)  # another group of the same rig: not compared
    keys = {group_key(run) for run in compared}
    assert len(keys) == 1
    kept = spread_rows_kept_for(keys)
    reference = spread_rows_from_runs(_measured().filter(_of_groups(keys)), limit=10)
    assert len(reference) == 1 and reference[0]["n"] == 3
    assert differences(kept, reference) == []
    spreads = spreads_for(compared)
    assert set(spreads) == keys and spreads[group_key(compared[0])].n_runs == 3
    # The page reads the kept row: change it and the spreads follow.
    RunSpread.objects.filter(rig_id=compared[0].rig_id, n=3).update(n=9)
    assert spreads_for(compared)[group_key(compared[0])].n_runs == 9

"""The board's rank walks read their index alone (issue 40): a page filtered by GPU and
speculation walks ``run_ranked_idx`` and a page of several model files walks each file's
``run_model_rank_idx``, both without a table row, and each file's walk names its file
alone. At a million runs the GPU + MTP page read and sorted 150k runs (153 ms) and a
two-file page read one file's 16,701 (105 ms); the walks take 2 ms
(benchmarks/README.md, "2026-11-27 (eleventh session)"). A GPU page's latest runs are
walked newest first to the cap, not gathered per rig and sorted (twelfth session).

The plans are PostgreSQL's, read with sequential scans, bitmaps and sorts switched off so a
handful of rows plan as a million do: a walk the index does not cover becomes an
``Index Scan`` (a table row per run), which these tests tell apart."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from leaderboard.results.models import Run

pytestmark = pytest.mark.django_db


def _page_query(client, path: str, start: str, needs: str) -> str:
    """Return the SQL of the one query of a page that starts with ``start`` and holds ``needs``."""
    with CaptureQueriesContext(connection) as queries:
        assert client.get(path).status_code == 200
    found = [q["sql"] for q in queries.captured_queries if q["sql"].startswith(start) and needs in q["sql"]]
    assert len(found) == 1, [q["sql"][:120] for q in queries.captured_queries]
    return found[0]


def _page_ids_query(client, path: str) -> str:
    """Return the SQL of the query that ranks a board page's runs (ids only, in order, a LIMIT)."""
    return _page_query(client, path, 'SELECT "results_run"."id" AS "pk" FROM', "ORDER BY")


def _plan(sql: str) -> str:
    with transaction.atomic(), connection.cursor() as cursor:
        for setting in ("enable_seqscan", "enable_bitmapscan", "enable_sort", "enable_hashagg"):
            cursor.execute(f"SET LOCAL {setting} = off")
        cursor.execute("EXPLAIN " + sql)
        return "\n".join(row[0] for row in cursor.fetchall())


@pytest.fixture
def runs(board_run: Callable[..., Run]) -> list[Run]:
    made = []
    for i in range(12):
        made.append(
            board_run(
                rig=f"rig-{i % 3}",
                gpus=[("H100 PCIe", 1)] if i % 3 else [("RTX 3090", 1)],
                model=("Qwen3.6-A", "Qwen3.6-B", "Llama-C")[i % 3],
                spec=("mtp", "none")[i % 2],
                tps=[50.0 + i],
            )
        )
    return made


@pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's plans")
def test_a_gpu_and_speculation_page_walks_the_ranking_index_alone(client, runs) -> None:
    plan = _plan(_page_ids_query(client, "/?gpu=H100 PCIe&spec=mtp"))
    assert "Index Only Scan using run_ranked_idx" in plan, plan
    assert "Index Scan using run_ranked_idx" not in plan, plan


@pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's plans")
def test_each_model_files_walk_reads_its_index_alone_and_names_its_file_alone(client, runs) -> None:
    sql = _page_ids_query(client, "/?model=qwen3.6&since=2025-07-01")
    files = sorted({run.model_file_id for run in runs if run.model_file.name.startswith("Qwen3.6")})
    listed = f'"model_file_id" IN ({", ".join(str(f) for f in files)})'
    # The outer filter names both files; a walk naming them too was misestimated.
    assert sql.count(listed) == 1, sql
    plan = _plan(sql)
    assert plan.count("Index Only Scan using run_model_rank_idx") == len(files), plan
    assert "Index Scan using run_model_rank_idx" not in plan, plan


@pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's plans")
def test_a_gpu_pages_latest_runs_walk_the_recent_index_newest_first(client, runs) -> None:
    # The shares of the bound read the GPU's latest runs: per rig, every run of the GPU's
    # rigs was read and sorted (150k at 1M); newest first, the walk stops at the cap.
    newest_first = '"results_run"."created_at" DESC'
    sql = _page_query(client, "/gpus/H100 PCIe/", "SELECT shown_share.", newest_first)
    plan = _plan(sql)
    assert "Index Only Scan using run_recent_idx" in plan, plan
    assert "Sort" not in plan.replace("Sort Key", ""), plan


@pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's plans")
def test_a_gpu_pages_count_leaves_failed_checks_out_from_the_ranking_index_alone(client, runs) -> None:
    # Runs with a failed output check are left out by the count kept with the summary, which
    # the rank index carries: the capped count probed the samples table per run (145 ms at 10M).
    sql = _page_query(client, "/gpus/H100 PCIe/", "SELECT COUNT(*)", '"results_run"')
    assert "results_sample" not in sql and '"failed_checks" = 0' in sql, sql
    plan = _plan(sql)
    # Which rank index the planner walks depends on the rows (here the rig's); each carries the count.
    assert "Index Only Scan using run_" in plan and "failed_checks = 0" in plan, plan
    assert "Index Scan using run_" not in plan, plan


def test_a_searchs_count_filters_the_runs_by_the_matching_rigs_ids(client, runs) -> None:
    # The search box's rigs and model files are found first and the runs filtered by their
    # ids as constants: as subqueries, the capped count tested every ranked run (33 → 6 ms
    # at 100k runs), where constants let it read an index led by the rig for those rigs
    # alone. A handful of rows plan on the workload's index instead, so the shape is held
    # here and the plan measured at scale (benchmarks/README.md, issue 40).
    rig_ids = sorted(set(Run.objects.filter(rig__gpus__model="H100 PCIe").values_list("rig_id", flat=True)))
    sql = _page_query(client, "/?q=H100", "SELECT COUNT(*)", '"results_run"')
    assert "LIKE" not in sql and f'"results_run"."rig_id" IN ({", ".join(map(str, rig_ids))})' in sql, sql

"""A dump round-trips (issue 39): every public run's figures read back from the
Parquet equal the API's, a hidden rig's rows are in no file, the manifest's
sha256s and row counts match the files, and each table loads in one line."""

from __future__ import annotations

import csv
import hashlib
import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from django.test import Client

from leaderboard.opendata.services import board_dump
from leaderboard.opendata.tables import TABLES
from leaderboard.opendata.writer import DATACARD, MANIFEST
from leaderboard.results.api.serializers.outputs import SUMMARY_FIELDS
from tests.opendata.conftest import MARK, OWNER_EMAIL, OWNER_NAME, WEBHOOK, Board

pytestmark = pytest.mark.django_db


def api_runs(client: Client) -> list[dict[str, Any]]:
    """Every public run as GET /api/runs/ lists it, walked by cursor."""
    runs: list[dict[str, Any]] = []
    url: str | None = "/api/runs/?cursor=&page_size=2"
    while url:
        body = client.get(url).json()
        runs += body["results"]
        url = body["next"]
    return runs


def test_every_public_runs_figures_in_the_parquet_equal_the_apis(client: Client, board: Board, tmp_path: Path) -> None:
    dump = board_dump(root=tmp_path, keep=3, batch_rows=2)

    parquet = {row["run_uuid"]: row for row in pq.read_table(dump.path / "runs.parquet").to_pylist()}
    listed = api_runs(client)

    assert len(listed) == len(board.public_runs)  # the API is the oracle: it lists each public run once
    assert set(parquet) == {run["uuid"] for run in listed}
    for run in listed:
        row = parquet[run["uuid"]]
        for name in SUMMARY_FIELDS:
            assert row[name] == run["summary"][name], (run["uuid"], name)
        assert row["rig_name"] == run["rig"]
        assert row["rig_gpus"] == run["gpu_summary"]
        assert row["comparison_key"] == run["comparison_key"]
        assert row["page_path"] == run["page_url"]
        assert row["provenance"] == run["provenance"]
        assert row["source_key"] == run["source"]
    reported = parquet[str(board.public_runs[3].uuid)]
    assert reported["cost_usd_per_mtok"] == 2.5 and reported["summary_source"] == "published"


def test_the_repetitions_in_the_dump_are_the_apis_samples(client: Client, board: Board, tmp_path: Path) -> None:
    dump = board_dump(root=tmp_path, keep=3)
    run = board.public_runs[0]
    detail = client.get(f"/api/runs/{run.uuid}/").json()

    rows = [r for r in pq.read_table(dump.path / "repetitions.parquet").to_pylist() if r["run_id"] == run.pk]

    assert [r["decode_tokens_per_s_server"] for r in rows] == [
        s["decode_tokens_per_s_server"] for s in detail["samples"]
    ]
    # The one decode rule: the server's figure when there is one.
    assert [r["decode_tokens_per_s"] for r in rows] == [s["decode_tokens_per_s_server"] for s in detail["samples"]]
    levels = [r for r in pq.read_table(dump.path / "concurrency_levels.parquet").to_pylist() if r["run_id"] == run.pk]
    assert [(r["concurrency_streams"], r["output_tokens_per_s"]) for r in levels] == [
        (level["concurrency"], level["output_tokens_per_s"]) for level in detail["concurrency_levels"]
    ]


def test_a_hidden_rigs_rows_are_in_no_file_and_no_account_data_is(board: Board, tmp_path: Path) -> None:
    dump = board_dump(root=tmp_path, keep=3)
    hidden_ids = {run.pk for run in board.hidden_runs}

    for table in TABLES:
        rows = pq.read_table(dump.path / f"{table.name}.parquet").to_pylist()
        assert rows, f"{table.name}: no public row, so the check below could not fail"
        run_ids = {r.get("run_id") for r in rows} | {r.get("new_run_id") for r in rows}
        assert not run_ids & hidden_ids, table.name
        assert board.hidden_rig.pk not in {r.get("rig_id") for r in rows}, table.name
    texts = {path.name: path.read_text(encoding="utf-8") for path in dump.path.glob("*.csv")}
    texts[DATACARD] = (dump.path / DATACARD).read_text(encoding="utf-8")
    for name, text in texts.items():
        for secret in (MARK, OWNER_EMAIL, OWNER_NAME, WEBHOOK, board.token_prefix, "88888"):
            assert secret not in text, (name, secret)
    # The public rows are there: the checks above could fail.
    assert "public-rig" in texts["runs.csv"] and "public campaign" in texts["campaign_trials.csv"]


def test_the_manifest_names_every_file_with_its_rows_size_and_sha256(board: Board, tmp_path: Path) -> None:
    dump = board_dump(root=tmp_path, keep=3)
    manifest = json.loads((dump.path / MANIFEST).read_text())

    assert manifest["schema_version"] >= 1 and manifest["name"] == dump.name
    assert {f["name"] for f in manifest["files"]} == {p.name for p in dump.path.iterdir()} - {MANIFEST}
    for entry in manifest["files"]:
        data = (dump.path / entry["name"]).read_bytes()
        assert hashlib.sha256(data).hexdigest() == entry["sha256"], entry["name"]
        assert len(data) == entry["bytes"]
        if entry["format"] == "parquet":
            assert pq.ParquetFile(dump.path / entry["name"]).metadata.num_rows == entry["rows"]
        elif entry["format"] == "csv":
            with (dump.path / entry["name"]).open(newline="", encoding="utf-8") as handle:
                assert sum(1 for _ in csv.reader(handle)) - 1 == entry["rows"]
    assert manifest["row_counts"]["runs"] == len(board.public_runs)


def test_the_writer_writes_a_batch_at_a_time(board: Board, tmp_path: Path) -> None:
    small = board_dump(root=tmp_path / "small", keep=1, batch_rows=2)
    whole = board_dump(root=tmp_path / "whole", keep=1, batch_rows=10_000)

    batched = pq.ParquetFile(small.path / "repetitions.parquet")
    assert batched.metadata.num_row_groups == -(-small.row_counts["repetitions"] // 2)
    assert pq.read_table(small.path / "repetitions.parquet").equals(pq.read_table(whole.path / "repetitions.parquet"))
    assert (small.path / "repetitions.csv").read_bytes() == (whole.path / "repetitions.csv").read_bytes()


def test_each_table_loads_in_one_line_with_pandas_polars_and_duckdb(board: Board, tmp_path: Path) -> None:
    import duckdb
    import pandas
    import polars

    dump = board_dump(root=tmp_path, keep=1)
    path = str(dump.path / "runs.parquet")
    expected = sorted(run.decode_tokens_per_s_mean for run in board.public_runs)

    by_pandas = pandas.read_parquet(path)
    by_polars = polars.read_parquet(path)
    by_duckdb = duckdb.sql(f"SELECT * FROM '{path}'")  # noqa: S608 - a file the test wrote

    assert sorted(by_pandas["decode_tokens_per_s_mean"]) == pytest.approx(expected)
    assert sorted(by_polars["decode_tokens_per_s_mean"].to_list()) == pytest.approx(expected)
    # (Python objects of DuckDB's TIMESTAMPTZ need pytz: the figures are fetched, the relation is all of it.)
    assert sorted(v for (v,) in by_duckdb.select("decode_tokens_per_s_mean").fetchall()) == pytest.approx(expected)
    assert by_duckdb.columns == [c.name for c in TABLES[0].columns]
    # Timestamps load as timestamps, in UTC, in every tool.
    assert str(by_pandas["created_at"].dt.tz) == "UTC"
    assert by_polars.schema["created_at"] == polars.Datetime("us", "UTC")
    # The CSV opens with its header and the same rows.
    assert len(pandas.read_csv(dump.path / "runs.csv")) == len(expected)

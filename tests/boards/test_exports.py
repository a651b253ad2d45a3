"""CSV and JSON exports: exactly the rows of the view with the same query string."""

from __future__ import annotations

import csv
import io
import re

import pytest
from django.test import Client

from leaderboard.boards.rows import EXPORT_COLUMNS

pytestmark = pytest.mark.django_db


def run_ids_in(html: str) -> list[int]:
    return [int(m) for m in re.findall(r'name="runs" value="(\d+)"', html)]


@pytest.fixture
def five_runs(board_run, reported_run):
    return [
        board_run(tps=[250.0, 249.0]),
        board_run(tps=[74.0, 75.0], model="Qwen3.6-27B-MTP", architecture="dense"),
        board_run(tps=[182.0, 181.0], engine="vllm", model="Nemotron-30B-A3B", quant="NVFP4", spec="none"),
        board_run(rig="six-3090s", gpus=[("RTX 3090", 6)], tps=[46.3, 45.9], spec="none"),
        reported_run(decode=150.0),
    ]


@pytest.mark.parametrize(
    "query", ["", "spec=none", "sort=rig&per_page=2&page=2", "provenance=reported", "gpu=RTX+3090"]
)
def test_the_csv_export_has_exactly_the_rows_of_the_view(client: Client, five_runs, query: str) -> None:
    html = client.get(f"/?{query}").text

    response = client.get(f"/leaderboard.csv?{query}")

    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert [int(r["run_id"]) for r in rows] == run_ids_in(html)
    assert list(rows[0].keys()) == EXPORT_COLUMNS


@pytest.mark.parametrize("query", ["", "spec=mtp", "sort=-cost&per_page=3", "engine=vllm&usd_per_kwh=0.3"])
def test_the_json_export_has_exactly_the_rows_of_the_view(client: Client, five_runs, query: str) -> None:
    html = client.get(f"/?{query}").text

    body = client.get(f"/leaderboard.json?{query}").json()

    assert [r["run_id"] for r in body["rows"]] == run_ids_in(html)
    assert body["columns"] == EXPORT_COLUMNS


def test_the_json_export_carries_the_figures_and_the_price(client: Client, board_run) -> None:
    run = board_run(tps=[100.0, 100.0, 100.0], energy_j=900.0)

    body = client.get("/leaderboard.json?usd_per_kwh=0.4").json()

    row = body["rows"][0]
    assert body["meta"]["usd_per_kwh"] == 0.4
    assert body["meta"]["total"] == 1
    assert row["run_id"] == run.pk
    assert row["decode_tokens_per_s_mean"] == pytest.approx(100.0)
    assert row["tokens_per_kwh"] == pytest.approx(8_000_000)
    assert row["electricity_usd_per_mtok"] == pytest.approx(0.05)
    assert row["provenance"] == "measured"
    assert row["n"] == 3


def test_an_export_with_a_bad_filter_is_a_400_naming_the_field(client: Client, board_run) -> None:
    board_run()

    csv_response = client.get("/leaderboard.csv?spec=warp-drive")
    json_response = client.get("/leaderboard.json?spec=warp-drive")

    assert csv_response.status_code == 400
    assert json_response.status_code == 400
    assert "spec" in json_response.json()["errors"]


def test_the_csv_export_defuses_spreadsheet_formulas(client: Client, board_run) -> None:
    board_run(rig='=HYPERLINK("http://evil")')

    text = client.get("/leaderboard.csv").content.decode()

    assert "'=HYPERLINK" in text

"""CSV, JSON and NDJSON exports: every row of the view with the same query string, on
all its pages (issue 37: the export held the current page only), with a GPU or model
page's own filter."""

from __future__ import annotations

import csv
import io
import json
import re
from html import unescape

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


def all_pages_ids(client: Client, query: str) -> list[int]:
    """Return the run ids of every page of the view for ``query``, in order, page by page."""
    ids: list[int] = []
    page = 1
    while True:
        html = client.get(f"/?{query}&page={page}").text
        ids += run_ids_in(html)
        if 'rel="next"' not in html:
            return ids
        page += 1


def csv_rows(response) -> list[dict[str, str]]:
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/csv")
    return list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))


def streamed_json(response) -> dict:
    assert response.status_code == 200
    return json.loads(b"".join(response.streaming_content))


@pytest.mark.parametrize(
    "query",
    ["", "spec=none", "sort=rig&per_page=2", "sort=rig&per_page=2&page=2", "provenance=reported", "gpu=RTX+3090"],
)
def test_the_csv_export_has_every_row_of_the_filtered_view_on_all_its_pages(
    client: Client, five_runs, query: str
) -> None:
    rows = csv_rows(client.get(f"/leaderboard.csv?{query}"))

    assert [int(r["run_id"]) for r in rows] == all_pages_ids(client, query.replace("&page=2", ""))
    assert list(rows[0].keys()) == EXPORT_COLUMNS


def test_an_export_of_a_paged_view_is_not_cut_to_its_page(client: Client, five_runs) -> None:
    # Every workload mixed (the board's default ranks one workload, and so does its export).
    html = client.get("/?per_page=2&workload=all").text
    assert len(run_ids_in(html)) == 2  # the check can fail: the page holds fewer than the set

    rows = csv_rows(client.get("/leaderboard.csv?per_page=2&page=1&workload=all"))

    assert len(rows) == len(five_runs)


@pytest.mark.parametrize("query", ["", "spec=mtp", "sort=-cost&per_page=3", "engine=vllm&usd_per_kwh=0.3"])
def test_the_json_export_has_every_row_of_the_filtered_view(client: Client, five_runs, query: str) -> None:
    body = streamed_json(client.get(f"/leaderboard.json?{query}"))

    assert [r["run_id"] for r in body["rows"]] == all_pages_ids(client, query)
    assert body["columns"] == EXPORT_COLUMNS
    assert body["meta"]["total"] == len(body["rows"])


def test_the_ndjson_export_is_the_json_exports_rows_one_a_line(client: Client, five_runs) -> None:
    response = client.get("/leaderboard.ndjson?sort=rig")
    lines = b"".join(response.streaming_content).decode().splitlines()

    assert response["Content-Type"].startswith("application/x-ndjson")
    assert [json.loads(line) for line in lines] == streamed_json(client.get("/leaderboard.json?sort=rig"))["rows"]


def test_an_export_streams_in_chunks_the_same_rows(five_runs) -> None:
    from django.http import QueryDict

    from leaderboard.boards.selectors.leaderboard import export_rows, leaderboard_export

    export = leaderboard_export(QueryDict("sort=rig"))
    assert export.ids is not None

    chunked = [row.run_id for row in export_rows(export.ids, usd_per_kwh=0.15, chunk_rows=2)]
    whole = [row.run_id for row in export_rows(export.ids, usd_per_kwh=0.15, chunk_rows=1000)]

    assert len(chunked) == len(five_runs)
    assert chunked == whole


def test_the_gpu_pages_export_links_keep_the_pages_own_filter(client: Client, five_runs) -> None:
    html = client.get("/gpus/RTX 3090/").text
    links = re.findall(r'href="(/leaderboard\.(?:csv|json)[^"]*)"', html)
    assert len(links) == 2, links

    rows = csv_rows(client.get(unescape(links[0])))
    body = streamed_json(client.get(unescape(links[1])))

    expected = run_ids_in(html)
    assert expected  # the page ranks runs: the check can fail
    assert [int(r["run_id"]) for r in rows] == expected
    assert [r["run_id"] for r in body["rows"]] == expected
    assert all("RTX 3090" in r["gpus"] for r in rows)
    # The leaderboard ranks more than this GPU's runs: an export without the filter would hold them.
    assert len(all_pages_ids(client, "")) > len(expected)


def test_the_model_pages_export_links_keep_the_pages_own_filter(client: Client, five_runs) -> None:
    model_file_id = five_runs[1].model_file_id
    html = client.get(f"/models/{model_file_id}/").text
    link = re.search(r'href="(/leaderboard\.csv[^"]*)"', html)
    assert link is not None

    rows = csv_rows(client.get(unescape(link.group(1))))

    assert [int(r["run_id"]) for r in rows] == run_ids_in(html) == [five_runs[1].pk]


def test_a_published_row_prints_no_n_of_0_and_no_speculative_none(client: Client, board_run, reported_run) -> None:
    measured = board_run(tps=[100.0, 101.0, 99.0], spec="none")
    reported = reported_run(decode=150.0)

    rows = {int(r["run_id"]): r for r in csv_rows(client.get("/leaderboard.csv?workload=all"))}
    body = streamed_json(client.get("/leaderboard.json?workload=all"))

    assert rows[reported.pk]["n"] == ""  # the article stated no n: empty, never 0
    assert rows[measured.pk]["n"] == "3"
    assert rows[measured.pk]["speculative_type"] == ""
    assert "None" not in {value for row in rows.values() for value in row.values()}
    by_id = {r["run_id"]: r for r in body["rows"]}
    assert by_id[reported.pk]["n"] is None
    assert by_id[measured.pk]["speculative_type"] == ""
    assert "n" in body["notes"]


def test_a_printed_summary_exports_the_n_its_source_stated(client: Client, reported_run) -> None:
    from leaderboard.results.models import Workload

    run = reported_run(decode=42.0)
    Workload.objects.filter(pk=run.workload_id).update(repetitions=5)

    rows = csv_rows(client.get("/leaderboard.csv"))

    assert rows[0]["n"] == "5"


def test_the_json_export_carries_the_figures_and_the_price(client: Client, board_run) -> None:
    run = board_run(tps=[100.0, 100.0, 100.0], energy_j=900.0)

    body = streamed_json(client.get("/leaderboard.json?usd_per_kwh=0.4"))

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

    text = b"".join(client.get("/leaderboard.csv").streaming_content).decode()

    assert "'=HYPERLINK" in text

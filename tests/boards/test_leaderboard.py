"""The leaderboard page: ranking, columns, filters in the URL, sorting, pagination."""

from __future__ import annotations

import datetime as dt
import re

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db


def run_ids_in(html: str) -> list[int]:
    """Return the run ids of the leaderboard rows in page order (from the compare checkboxes)."""
    return [int(m) for m in re.findall(r'name="runs" value="(\d+)"', html)]


def test_it_ranks_runs_by_mean_decode_speed(client: Client, board_run) -> None:
    slow = board_run(tps=[74.1, 74.3, 74.4], model="Qwen3.6-27B", architecture="dense")
    fast = board_run(tps=[253.73, 248.63, 251.65])
    middle = board_run(tps=[182.0, 182.3, 182.1], engine="vllm", model="Nemotron-Elastic-30B-A3B", quant="NVFP4")

    response = client.get("/")

    assert response.status_code == 200
    assert run_ids_in(response.text) == [fast.pk, middle.pk, slow.pk]


def test_it_shows_every_column_of_a_row(client: Client, board_run) -> None:
    board_run(tps=[253.73, 248.63, 251.65], draft=(1634, 1454), energy_j=900.0)

    html = client.get("/").text

    assert "olares-one" in html
    assert "RTX 5090M Laptop" in html
    assert "llama.cpp" in html and "master-ad27757" in html
    assert "Qwen3.6-35B-A3B-MTP" in html and "UD-Q3_K_XL" in html
    assert "35B MoE-A3B + MTP" in html
    assert "89.0" in html  # accept % = 1454 / 1634
    assert "32,768" in html  # context
    assert "251.34" in html  # mean t/s
    assert "2.56" in html  # σ
    assert "248.6–253.7" in html  # range
    assert "measured" in html


def test_it_computes_electricity_cost_from_the_price_in_the_url(client: Client, board_run) -> None:
    # 3 samples × 2000 tokens with 900 J each: 6000 tokens / 0.00075 kWh = 8,000,000 tokens/kWh.
    board_run(tps=[100.0, 100.0, 100.0], energy_j=900.0)

    default_html = client.get("/").text
    priced_html = client.get("/?usd_per_kwh=0.40").text

    assert "8,000,000" in default_html
    assert "0.02" in default_html  # 0.15 $/kWh × 1e6 / 8e6 tokens/kWh = $0.01875/MTok
    assert "0.05" in priced_html  # 0.40 × 1e6 / 8e6 = $0.05/MTok
    assert "$0.40/kWh" in priced_html


def test_it_links_a_reported_row_to_its_source(client: Client, board_run, reported_run) -> None:
    board_run()
    reported_run(decode=150.0)

    html = client.get("/").text

    assert "reported" in html
    assert 'href="https://example.org/267-tok-s"' in html


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("gpu=RTX+3090", {"sixpack"}),
        ("rig=olares-one", {"mtp-moe", "dense", "vllm"}),
        ("model=qwen3.6-27", {"dense"}),
        ("engine=vllm", {"vllm"}),
        ("spec=none", {"vllm", "sixpack"}),
        ("quant=NVFP4", {"vllm"}),
        ("provenance=reported", {"reported"}),
        ("provenance=measured&spec=mtp", {"mtp-moe", "dense"}),
    ],
)
def test_each_filter_narrows_the_rows(client: Client, board_run, reported_run, query, expected) -> None:
    runs = {
        "mtp-moe": board_run(tps=[250.0, 249.0]),
        "dense": board_run(tps=[74.0, 75.0], model="Qwen3.6-27B-MTP", architecture="dense"),
        "vllm": board_run(tps=[182.0, 181.0], engine="vllm", model="Nemotron-30B-A3B", quant="NVFP4", spec="none"),
        "sixpack": board_run(
            rig="six-3090s", gpus=[("RTX 3090", 6)], tps=[46.3, 45.9], model="Qwen3.5-122B-A10B", spec="none"
        ),
        "reported": reported_run(decode=150.0),
    }

    html = client.get(f"/?{query}").text

    assert set(run_ids_in(html)) == {runs[name].pk for name in expected}


def test_it_filters_by_workload_and_date(client: Client, board_run) -> None:
    old = board_run(created_at=dt.datetime(2026, 1, 5, 12, tzinfo=dt.UTC))
    new = board_run(created_at=dt.datetime(2026, 3, 1, 23, 30, tzinfo=dt.UTC), workload="long-context")

    by_date = client.get("/?since=2026-02-01&until=2026-03-01").text
    by_workload = client.get(f"/?workload={new.workload_id}").text
    before = client.get("/?until=2026-01-05").text

    assert run_ids_in(by_date) == [new.pk]
    assert run_ids_in(by_workload) == [new.pk]
    assert run_ids_in(before) == [old.pk]


def test_it_keeps_filters_in_the_sort_and_page_links(client: Client, board_run) -> None:
    for i in range(3):
        board_run(tps=[100.0 + i, 101.0 + i])

    html = client.get("/?engine=llama.cpp&per_page=2").text

    assert 'href="?engine=llama.cpp&amp;per_page=2&amp;sort=-rig"' in html
    assert re.search(r'href="\?engine=llama.cpp&amp;per_page=2&amp;page=2"', html)


def test_it_rejects_an_unknown_filter_value_without_failing(client: Client, board_run) -> None:
    board_run()

    response = client.get("/?engine=not-an-engine")

    assert response.status_code == 200
    assert run_ids_in(response.text) == []
    assert "Select a valid choice" in response.text


@pytest.mark.parametrize(
    "sort",
    [
        "decode",
        "-decode",
        "n",
        "rig",
        "-gpu",
        "engine",
        "model",
        "quant",
        "spec",
        "accept",
        "ctx",
        "power",
        "tpkwh",
        "cost",
        "-cost",
        "provenance",
        "date",
        "stdev",
        "range",
    ],
)
def test_it_sorts_by_any_column(client: Client, board_run, reported_run, sort: str) -> None:
    board_run(tps=[250.0, 249.0])
    board_run(rig="six-3090s", gpus=[("RTX 3090", 6)], tps=[46.3, 45.9], energy_j=None, spec="none", ctx=262144)
    reported_run(decode=150.0)

    # A measured and a reported workload: ranked together only when asked for.
    response = client.get(f"/?workload=all&sort={sort}")

    assert response.status_code == 200
    assert len(run_ids_in(response.text)) == 3


def test_it_sorts_ascending_and_descending(client: Client, board_run) -> None:
    a = board_run(rig="alpha", tps=[10.0, 11.0])
    b = board_run(rig="bravo", tps=[30.0, 31.0])

    assert run_ids_in(client.get("/?sort=rig").text) == [a.pk, b.pk]
    assert run_ids_in(client.get("/?sort=-rig").text) == [b.pk, a.pk]
    assert run_ids_in(client.get("/?sort=decode").text) == [a.pk, b.pk]


def test_it_paginates(client: Client, board_run) -> None:
    runs = [board_run(tps=[float(100 + i), float(101 + i)]) for i in range(5)]
    fastest_first = [r.pk for r in reversed(runs)]

    page1 = client.get("/?per_page=2").text
    page3 = client.get("/?per_page=2&page=3").text

    assert run_ids_in(page1) == fastest_first[:2]
    assert run_ids_in(page3) == fastest_first[4:]
    assert "page 3 of 3" in page3


def test_it_leaves_out_failed_and_running_runs(client: Client, board_run) -> None:
    finished = board_run()
    board_run(run={"status": "failed", "failure_reason": "OOM"})

    assert run_ids_in(client.get("/").text) == [finished.pk]


def test_it_shows_only_the_best_run_of_each_configuration_when_asked(client: Client, board_run) -> None:
    slower = board_run(tps=[240.0, 241.0])
    faster = board_run(tps=[250.0, 251.0])  # same rig, stack, model, configuration, workload
    other = board_run(tps=[100.0, 101.0], ctx=262144)  # another configuration

    every = run_ids_in(client.get("/").text)
    best = run_ids_in(client.get("/?best=on").text)

    assert every == [faster.pk, slower.pk, other.pk]
    assert best == [faster.pk, other.pk]


@pytest.mark.parametrize("until", ["9999-12-31", "0001-01-01"])
def test_a_date_filter_at_the_ends_of_the_calendar_is_no_500(client, board_run, until):
    board_run(tps=[10.0, 11.0, 12.0])
    for url in ("/", "/leaderboard.csv", "/leaderboard.json"):
        response = client.get(url, {"until": until, "since": "0001-01-01"})
        assert response.status_code == 200, url
        if response.streaming:  # the exports: their rows are read as they stream
            b"".join(response.streaming_content)

"""The run page: repetitions, statistics, flags, configuration, sweep table and charts."""

from __future__ import annotations

import pytest
from django.test import Client

from tests.fixtures.boards import SEED_004_REPS, figure_in, samples_from, sweep_points

pytestmark = pytest.mark.django_db


@pytest.fixture
def seed_004_run(board_run):
    samples = samples_from([t for t, _, _ in SEED_004_REPS])
    for sample, (_, drafted, accepted) in zip(samples, SEED_004_REPS, strict=True):
        sample["draft_n"], sample["draft_n_accepted"] = drafted, accepted
    samples[5]["output_ok"] = False
    samples[5]["flags"] = ["degenerate-output"]
    return board_run(
        samples=samples,
        sweep=sweep_points(),
        run={"server_log_tail": "srv  load_model: loaded", "fingerprint": {"gpu": "RTX 5090M", "driver": "580.1"}},
    )


def test_it_shows_each_repetition_with_its_acceptance(client: Client, seed_004_run) -> None:
    html = client.get(f"/runs/{seed_004_run.pk}/").text

    table = html.split('id="samples"')[1].split("</table>")[0]
    assert table.count("<tr") == 11  # header + 10 repetitions
    assert "253.73" in table and "1634" in table and "1454" in table and "89.0" in table
    assert "243.58" in table and "83.8" in table


def test_it_shows_the_summary_statistics(client: Client, seed_004_run) -> None:
    html = client.get(f"/runs/{seed_004_run.pk}/").text

    assert "249.30 t/s" in html  # mean, as seed 004 reports
    assert "10.15 t/s" in html  # range, as seed 004 reports
    assert "249.75 t/s" in html  # median
    run = seed_004_run
    run.refresh_from_db()
    assert f"{run.decode_tokens_per_s_ci95_low:.2f}–{run.decode_tokens_per_s_ci95_high:.2f} t/s" in html
    assert 247 < run.decode_tokens_per_s_ci95_low < 249.3 < run.decode_tokens_per_s_ci95_high < 252


def test_it_flags_failed_output_checks(client: Client, seed_004_run) -> None:
    html = client.get(f"/runs/{seed_004_run.pk}/").text

    assert "1 repetition failed" in html
    assert "degenerate-output" in html
    assert 'class="failed"' in html


def test_it_shows_configuration_build_fingerprint_and_log(client: Client, seed_004_run) -> None:
    html = client.get(f"/runs/{seed_004_run.pk}/").text

    assert "llama-server -m Qwen3.6-35B-A3B-MTP.gguf --ctx-size 32768" in html
    assert "master-ad27757" in html
    assert "&quot;driver&quot;: &quot;580.1&quot;" in html
    assert "srv  load_model: loaded" in html
    assert seed_004_run.configuration.config_hash[:16] in html


def test_it_shows_the_sweep_with_deltas_against_the_first_depth(client: Client, seed_004_run) -> None:
    html = client.get(f"/runs/{seed_004_run.pk}/").text

    table = html.split('id="sweep"')[1].split("</table>")[0]
    assert table.count("<tr") == 8
    assert "baseline" in table
    assert "-27.4%" in table  # decode 33.6 vs 46.3 at 4K
    assert "+6.2%" in table  # prefill 687.8 vs 647.5


def test_its_charts_have_traces_with_units(client: Client, seed_004_run) -> None:
    html = client.get(f"/runs/{seed_004_run.pk}/").text

    reps = figure_in(html, "reps")
    accept = figure_in(html, "accept")
    sweep = figure_in(html, "sweep-fig")
    assert len(reps["data"][0]["y"]) == 10
    assert "t/s" in reps["data"][0]["hovertext"][0]
    assert len(accept["data"][0]["y"]) == 10
    assert "%" in accept["data"][0]["hovertext"][0]
    key, *lines = sweep["data"]
    assert key["meta"] == {"legend": True} and len(lines) == 7  # the run's legend key, seven panes
    assert sweep["layout"]["xaxis"]["type"] == "log"
    assert any("W" in h for h in lines[3]["hovertext"])
    assert 'src="/static/vendor/plotly-basic-4.1.1.min.js"' in html


def test_a_reported_run_says_its_figures_are_published(client: Client, reported_run) -> None:
    run = reported_run(decode=150.0)

    html = client.get(f"/runs/{run.pk}/").text

    assert "As published by the source" in html
    assert "150.00 t/s" in html


def test_an_unknown_run_is_a_404(client: Client, db) -> None:
    assert client.get("/runs/999999/").status_code == 404


@pytest.mark.parametrize(
    ("stored", "command_line", "shown"),
    [
        ("", "llama-server -m m.gguf --flash-attn on --ctx-size 32768", "on"),
        ("", "llama-server -m m.gguf -fa off", "off"),
        ("", "llama-server -m m.gguf --flash-attn --ctx-size 4096", "on"),  # a bare flag of older builds
        ("auto", "llama-server --flash-attn on", "auto"),  # what was stored wins
        ("", "llama-server -m m.gguf", "–"),
    ],
)
def test_flash_attention_is_read_from_the_command_line_when_not_stored(stored, command_line, shown) -> None:
    from types import SimpleNamespace

    from leaderboard.boards.formatting import flash_attn_shown

    assert flash_attn_shown(SimpleNamespace(flash_attn=stored, command_line=command_line)) == shown

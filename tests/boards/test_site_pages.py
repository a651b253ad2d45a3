"""The site's pages through the test client:
sweep-only runs listed, blanks sorted last, honest labels, provenance, error
pages, exports, run-to-run noise and failed output checks. The browser checks of
the same faults (what a person sees at 1400 px and 390 px) are in test_site_browser.py."""

from __future__ import annotations

import csv
import io
import json
import re

import pytest
from django.test import Client

from leaderboard.results.models import Run
from leaderboard.results.services.published import published_import
from tests.fixtures.boards import figure_in, run_ids_in, samples_from, sweep_points

pytestmark = pytest.mark.django_db


@pytest.fixture
def published(db: None) -> None:
    published_import()


def report(key: str) -> Run:
    return Run.objects.get(report_key=key)


SIX_3090 = "six-3090-qwen35-122b-a10b-q6kxl-ctx-sweep"


def test_a_sweep_only_run_is_on_the_leaderboard_with_its_shortest_context_and_a_marker(client: Client, published):
    sweep = report(SIX_3090)

    html = client.get("/?workload=all").text

    assert sweep.pk in run_ids_in(html)
    assert sweep.summary_source == "sweep"
    assert sweep.decode_tokens_per_s_mean == 46.3  # 4K, the shortest context
    row = re.search(rf'name="runs" value="{sweep.pk}".*?</tr>', html, re.S).group(0)
    assert "46.30" in row and 'class="badge sweep"' in row


def test_the_six_3090_rig_page_lists_its_finished_runs(client: Client, published):
    sweep = report(SIX_3090)

    html = client.get(f"/rigs/{sweep.rig_id}/").text

    assert "No finished runs yet" not in html
    assert f'href="/runs/{sweep.pk}/"' in html
    assert 'class="badge sweep"' in html


def test_a_measured_run_with_only_a_sweep_gets_its_headline(board_run) -> None:
    run = board_run(samples=[], sweep=sweep_points())

    assert run.summary_source == "sweep"
    assert run.n_samples == 0
    assert (run.decode_tokens_per_s_mean, run.prefill_tokens_per_s_mean, run.power_w_mean) == (46.3, 647.5, 818)


def test_sorting_by_a_column_blank_on_every_row_falls_back_to_decode_speed(client: Client, board_run) -> None:
    slow = board_run(tps=[50.0, 51.0], energy_j=None)
    fast = board_run(tps=[150.0, 151.0], energy_j=None)
    middle = board_run(tps=[100.0, 101.0], energy_j=None)

    for sort in ("-tpkwh", "tpkwh", "-power", "accept"):
        response = client.get(f"/?sort={sort}")
        assert run_ids_in(response.text) == [fast.pk, middle.pk, slow.pk], sort
    html = client.get("/?sort=-tpkwh").text
    assert re.search(r"Ranked by <strong>Tokens/kWh</strong>.*runs without it last, ties by decode t/s", html)
    assert "Ranked by <strong>Decode t/s</strong> (highest first)" in client.get("/").text


def test_blanks_sort_last_either_way(client: Client, board_run) -> None:
    blank = board_run(tps=[300.0, 301.0], energy_j=None)
    low = board_run(tps=[10.0, 11.0], energy_j=100.0)
    high = board_run(tps=[20.0, 21.0], energy_j=5000.0)

    assert run_ids_in(client.get("/?sort=-tpkwh").text) == [low.pk, high.pk, blank.pk]
    assert run_ids_in(client.get("/?sort=tpkwh").text) == [high.pk, low.pk, blank.pk]


def test_the_rank_cell_is_not_a_link_to_another_run(client: Client, board_run) -> None:
    board_run(tps=[10.0, 11.0])
    board_run(tps=[20.0, 21.0])

    html = client.get("/").text

    assert re.findall(r'<td class="rank"[^>]*>(.*?)</td>', html) == ["1", "2"]


def test_a_seventh_run_is_not_dropped_silently(client: Client, board_run) -> None:
    runs = [board_run(tps=[100.0 + i, 101.0 + i]) for i in range(7)]

    html = client.get("/compare/?runs=" + ",".join(str(r.pk) for r in runs)).text

    assert html.count('<tr class="baseline">') + len(re.findall(r"<tr>\s*<td><a href=\"/runs/", html)) == 6
    assert re.search(rf'id="dropped">At most 6 runs are compared at once: #{runs[6].pk} was left out', html)


def test_more_runs_can_be_added_on_the_compare_page(client: Client, board_run) -> None:
    a, b, c = (board_run(tps=[100.0 + i, 101.0 + i]) for i in range(3))

    html = client.get(f"/compare/?runs={a.pk},{b.pk}&add={c.pk}").text

    assert 'id="add-run"' in html
    assert f'name="runs" value="{a.pk},{b.pk},{c.pk}"' in html


def test_the_compare_chart_reads_at_six_runs(client: Client, board_run) -> None:
    runs = [board_run(tps=[100.0 + i, 101.0 + i], rig=f"rig-{i}") for i in range(6)]

    html = client.get("/compare/?runs=" + ",".join(str(r.pk) for r in runs)).text
    figure = figure_in(html, "dist")

    assert figure["layout"]["showlegend"] is False
    assert figure["layout"]["xaxis"]["tickangle"] == 0
    assert [t.split("<br>")[0] for t in figure["layout"]["xaxis"]["ticktext"]] == [f"#{r.pk}" for r in runs]


def test_a_run_page_offers_the_runs_with_its_comparison_key(client: Client, board_run) -> None:
    mine = board_run(tps=[100.0, 101.0])
    peer = board_run(tps=[120.0, 121.0], build="b9000")
    other_model = board_run(tps=[130.0, 131.0], model="Other-Model")

    html = client.get(f"/runs/{mine.pk}/").text

    assert f'href="/compare/?runs={mine.pk},{peer.pk}"' in html
    assert f'href="/runs/{other_model.pk}/"' not in html


def test_a_reported_run_without_checks_does_not_claim_they_passed(client: Client, published) -> None:
    run = report("olares-qwen36-35b-a3b-mtp-q3kxl-32k")

    html = client.get(f"/runs/{run.pk}/").text

    assert "All output checks passed" not in html
    assert "No output checks were recorded for this run." in html


def test_a_sweep_only_run_page_shows_only_the_figures_it_has(client: Client, published) -> None:
    html = client.get(f"/runs/{report(SIX_3090).pk}/").text

    stats = re.search(r'<dl class="stats">(.*?)</dl>', html, re.S).group(1)
    assert "–" not in stats
    assert "decode (shortest context)" in stats
    assert 'id="sweep-headline"' in html and "(4K)" in html


def test_the_date_is_the_articles_not_the_import_date(client: Client, published) -> None:
    html = client.get("/?workload=all").text

    sweep = report(SIX_3090)
    row = re.search(rf'name="runs" value="{sweep.pk}".*?</tr>', html, re.S).group(0)
    assert "2026-03" in row
    undated = report("olares-nemotron-elastic-30b-a3b-nvfp4-vllm-40082")
    row = re.search(rf'name="runs" value="{undated.pk}".*?</tr>', html, re.S).group(0)
    assert "undated" in row and undated.created_at.strftime("%Y-%m-%d") not in row


def test_no_published_comparison_reads_from_an_empty_source(client: Client, published) -> None:
    from leaderboard.results.models import PublishedComparison

    for comparison in PublishedComparison.objects.all():
        html = client.get(f"/published/comparisons/{comparison.pk}/").text
        lede = re.search(r'<p class="lede" id="from">(.*?)</p>', html, re.S).group(1)
        assert not re.search(r"From\s*\.", lede), comparison.title
        assert f'href="/published/sources/{comparison.source_id}/"' in lede


def test_every_reported_row_links_to_its_source_page(client: Client, published) -> None:
    html = client.get("/?per_page=100").text

    assert html.count('class="source-link"') == html.count('class="badge reported"') > 10
    source_id = report(SIX_3090).source_id
    page = client.get(f"/published/sources/{source_id}/")
    assert page.status_code == 200
    assert "Running Qwen3.5-122B-A10B on Six RTX 3090s" in page.text and "2026-03" in page.text


def test_the_cloud_rows_api_price_is_shown(client: Client, published) -> None:
    cloud = Run.objects.get(cost_usd_per_mtok=150)

    html = client.get("/").text

    row = re.search(rf'name="runs" value="{cloud.pk}".*?</tr>', html, re.S).group(0)
    assert re.search(r'col-cost">150 <span class="muted"[^>]*>API</span>', row)


def test_as_printed_tables_keep_the_printed_digits(client: Client, published) -> None:
    from leaderboard.results.models import PublishedComparison

    comparison = PublishedComparison.objects.get(title="The new Olares One leaderboard")
    table = client.get(f"/published/comparisons/{comparison.pk}/").text

    assert "182.14" in table and "182.1<" not in table
    # Seed 004 printed 249.30: the trailing zero is a printed digit too (the float alone is 249.3).
    assert ">249.30<" in table and "249.3<" not in table
    assert "249.30 t/s" in figure_in(table, "published-bars")["data"][0]["hovertext"][0]


def test_the_experiments_page_keeps_side_tests_apart_and_shows_the_fit(client: Client, published) -> None:
    html = client.get("/published/experiments/").text

    figure = figure_in(html, "journey-1")
    assert figure["data"][0]["y"][-1] == 29.899  # the summit ends the journey
    assert figure["data"][1]["name"] == "side test (not a phase)" and figure["data"][1]["y"] == [3.7]
    assert "α = 4.247" in html
    fit = figure_in(html, "fit-1-1")
    assert fit["data"][0]["y"][0] == pytest.approx(9.81e-6 * 42**4.247)


def test_exports_round_floats(client: Client, board_run) -> None:
    board_run(tps=[249.303, 249.303, 249.303])  # the mean comes out as 249.30300000000003

    text = b"".join(client.get("/leaderboard.csv").streaming_content).decode()
    data = json.loads(b"".join(client.get("/leaderboard.json").streaming_content))

    row = next(csv.DictReader(io.StringIO(text)))
    assert row["decode_tokens_per_s_mean"] == "249.303"
    assert data["rows"][0]["decode_tokens_per_s_mean"] == 249.303
    assert "00000000" not in text


def test_a_run_in_the_api_links_to_its_page(client: Client, board_run) -> None:
    run = board_run()

    listed = client.get("/api/runs/").json()
    detail = client.get(f"/api/runs/{run.uuid}/").json()

    assert listed["results"][0]["page_url"] == f"/runs/{run.pk}/"
    assert detail["page_url"] == f"/runs/{run.pk}/"
    assert client.get(detail["page_url"]).status_code == 200


def test_custom_error_pages_and_favicon(client: Client, settings) -> None:
    settings.DEBUG = False

    missing = client.get("/no/such/page/")
    icon = client.get("/favicon.ico")

    assert missing.status_code == 404
    assert "Page not found" in missing.text and "URL patterns" not in missing.text
    assert "/no/such/page/" in missing.text
    assert icon.status_code == 200 and icon["Content-Type"] == "image/x-icon"
    assert icon.content[:4] == b"\x00\x00\x01\x00"


def test_the_demo_with_debug_on_shows_the_sites_404_not_djangos_url_list(client: Client, settings) -> None:
    settings.DEBUG = True  # as `make demo` runs

    missing = client.get("/no/such/page/")
    gone = client.get("/runs/999999999/")
    api = client.get("/api/no-such-endpoint/")

    for response in (missing, gone):
        assert response.status_code == 404
        assert "Back to the leaderboard" in response.text  # the site's page
        assert "DEBUG = True" not in response.text and "URL patterns" not in response.text
    assert "Nothing lives at <code>/no/such/page/</code>" in missing.text
    assert api.status_code == 404 and api["Content-Type"].startswith("application/json")


def test_the_500_page_renders_without_a_request_context(settings) -> None:
    from django.test import RequestFactory

    from leaderboard.boards.views import server_error

    settings.DEBUG = False
    response = server_error(RequestFactory().get("/"))

    assert response.status_code == 500
    assert b"Something went wrong" in response.content


def test_sample_sd_and_pooled_acceptance_are_labelled(client: Client, board_run) -> None:
    samples = samples_from([100.0, 110.0, 120.0], draft=None)
    for sample, (drafted, accepted) in zip(samples, [(10, 9), (100, 50), (10, 10)], strict=True):
        sample["draft_n"], sample["draft_n_accepted"] = drafted, accepted
        sample["ttft_ms"] = 100.0 * sample["index"]
    run = board_run(samples=samples)

    html = client.get(f"/runs/{run.pk}/").text

    assert "σ (sample, n−1)" in html
    assert re.search(r'id="accept-pooled"><dt[^>]*>accept \(pooled\)</dt><dd>57\.5 %', html)  # 69 / 120
    assert re.search(r'id="accept-mean"><dt[^>]*>accept \(mean per repetition\)</dt><dd>80\.0 %', html)
    assert re.search(r'id="ttft-p50"><dt>TTFT p50</dt><dd>200 ms', html)
    assert re.search(r'id="ttft-p90"><dt>TTFT p90</dt><dd>280 ms', html)
    assert "sample standard deviation (n−1)" in client.get("/").text


def failed_samples(tps: list[float]) -> list[dict]:
    samples = samples_from(tps)
    samples[0]["output_ok"] = False
    samples[0]["flags"] = ["repetitive"]
    return samples


def test_a_run_with_failed_output_checks_is_left_out_of_the_default_ranking(client: Client, board_run) -> None:
    broken = board_run(samples=failed_samples([500.0, 501.0]))
    good = board_run(tps=[100.0, 101.0])

    default = client.get("/").text
    shown = client.get("/?failed=on").text

    assert run_ids_in(default) == [good.pk]
    assert re.search(r'<a href="\?failed=on" id="show-failed">show them</a>', default)
    assert run_ids_in(shown) == [broken.pk, good.pk]
    row = re.search(rf'name="runs" value="{broken.pk}".*?</tr>', shown, re.S).group(0)
    assert 'class="badge failed"' in row
    run_html = client.get(f"/runs/{broken.pk}/").text
    assert 'id="failed-note"' in run_html and "left out of the default leaderboard ranking" in run_html
    rig_html = client.get(f"/rigs/{broken.rig_id}/").text
    assert 'class="badge failed"' in rig_html


def test_the_rig_page_shows_run_to_run_noise(client: Client, board_run) -> None:
    runs = [board_run(tps=[t, t, t]) for t in (100.0, 102.0, 98.0)]

    html = client.get(f"/rigs/{runs[0].rig_id}/").text

    table = re.search(r'<table class="board" id="noise">(.*?)</table>', html, re.S).group(1)
    assert ">3<" in table  # three runs
    assert "98.00–102.00" in table
    assert "±4.0%" in table  # (102 − 98) / 100


def test_a_comparison_within_run_to_run_spread_is_not_called_faster(client: Client, board_run) -> None:
    baseline_runs = [board_run(tps=[t - 0.5, t, t + 0.5]) for t in (100.0, 104.0, 96.0)]  # spread ±8%
    candidate = board_run(tps=[102.5, 103.0, 103.5], build="b9999")
    clear_win = board_run(tps=[150.5, 151.0, 151.5], build="b10000")

    html = client.get(f"/compare/?runs={baseline_runs[0].pk},{candidate.pk},{clear_win.pk}").text

    verdicts = re.findall(r'<td class="verdict">(.*?)</td>', html, re.S)
    assert "within run-to-run spread" in verdicts[1] and "faster" not in verdicts[1]
    assert verdicts[2].strip() == "faster"


def test_gpu_and_model_pages_rank_the_stacks_on_them(client: Client, board_run) -> None:
    on_3090 = board_run(rig="six", gpus=[("RTX 3090", 6)], tps=[46.0, 46.5])
    on_5090 = board_run(tps=[250.0, 251.0])
    other_model = board_run(tps=[20.0, 21.0], model="Other-Model")

    gpu = client.get("/gpus/RTX 3090/")
    model = client.get(f"/models/{on_5090.model_file_id}/")
    board = client.get("/").text

    assert gpu.status_code == 200 and run_ids_in(gpu.text) == [on_3090.pk]
    assert model.status_code == 200 and run_ids_in(model.text) == [on_5090.pk, on_3090.pk]
    assert other_model.pk not in run_ids_in(model.text)
    assert 'href="/gpus/RTX%203090/"' in board and f'href="/models/{on_5090.model_file_id}/"' in board
    assert client.get("/gpus/No Such GPU/").status_code == 404
    assert client.get("/models/999999/").status_code == 404


def test_the_search_box_finds_rigs_gpus_and_models(client: Client, board_run) -> None:
    a = board_run(rig="garage-box", gpus=[("RTX 3090", 2)], tps=[40.0, 41.0])
    b = board_run(model="Gemma-4-26B", tps=[60.0, 61.0])

    assert run_ids_in(client.get("/?q=garage").text) == [a.pk]
    assert run_ids_in(client.get("/?q=3090").text) == [a.pk]
    assert run_ids_in(client.get("/?q=gemma").text) == [b.pk]
    assert 'type="search" name="q"' in client.get("/").text


def test_peak_vram_is_a_column(client: Client, board_run) -> None:
    samples = samples_from([100.0, 101.0])
    samples[0]["vram_peak_mib"], samples[1]["vram_peak_mib"] = 20480.0, 21504.0
    board_run(samples=samples)

    html = client.get("/").text

    assert "Peak VRAM GiB" in html
    assert '<td class="num opt col-vram">21.0</td>' in html


def test_the_default_ranking_is_one_workload_and_a_mixed_one_is_asked_for(client: Client, board_run) -> None:
    """Like with like: "/" ranks the workload with the most runs and offers the others;
    the visitor's choice stays in the address (``workload=<id>``, or ``workload=all``
    for every workload together, flagged as mixed)."""
    first = [board_run(tps=[40.0, 41.0]), board_run(tps=[42.0, 43.0])]
    other = board_run(tps=[60.0, 61.0], workload="other-test")  # faster, but measured differently

    default = client.get("/").text
    assert run_ids_in(default) == [first[1].pk, first[0].pk]
    assert 'id="workload-choice"' in default and 'id="mixed-workloads"' not in default
    chooser = default.split('id="workload-choice"', 1)[1].split("</nav>", 1)[0]
    assert f'href="?workload={other.workload_id}"' in chooser and "(1 run)" in chooser
    assert 'href="?workload=all"' in chooser and "(3 runs)" in chooser

    chosen = client.get(f"/?workload={other.workload_id}").text
    assert run_ids_in(chosen) == [other.pk] and 'id="mixed-workloads"' not in chosen
    mixed = client.get("/?workload=all").text
    assert run_ids_in(mixed) == [other.pk, first[1].pk, first[0].pk] and 'id="mixed-workloads"' in mixed
    # The filter form's "no workload" says what it means, and keeps meaning it.
    assert run_ids_in(client.get("/?workload=").text) == run_ids_in(mixed)
    assert ">all workloads, mixed</option>" in mixed


def test_the_leaderboard_has_a_chart_view_coloured_by_engine(client: Client, board_run) -> None:
    for i in range(3):
        board_run(tps=[100.0 + i, 101.0 + i], energy_j=900.0 + i)
    board_run(tps=[180.0, 181.0], engine="vllm", build="nightly", energy_j=700.0)

    figure = figure_in(client.get("/").text, "board")

    assert sorted(trace["name"] for trace in figure["data"]) == ["llama.cpp", "vLLM"]
    assert sorted(len(trace["x"]) for trace in figure["data"]) == [1, 3]
    assert figure["layout"]["xaxis"]["title"]["text"] == "tokens/kWh"

"""The concurrency charts in a real browser (Debian's headless Chromium through
Playwright): two runs overlaid on the compare page, the per-stream floor marked
where a run falls below it, the leaderboard ranked at one level, and the single
run's latency percentiles. Screenshots land in test-artifacts/."""

from __future__ import annotations

import re

import pytest

from leaderboard.results.services.runs import run_create
from tests.fixtures.boards import ensure_rig, samples_from
from tests.fixtures.concurrency import level_payload

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _run(model: str, spec: str, per_stream: dict[int, float], energy: bool = True):
    samples = samples_from([per_stream[1]] * 3)
    for i, sample in enumerate(samples):
        sample["ttft_ms"] = 90.0 + 10 * i
        sample["itl_ms"] = [8.0, 9.0, 10.0 + i]
    levels = [level_payload(n, tps, energy_j=30.0 * n if energy else None) for n, tps in per_stream.items()]
    return run_create(
        rig=ensure_rig("olares-one", [("RTX 5090M Laptop", 1)]),
        stack={"engine": "llama.cpp", "build": "b7000"},
        model_file={"name": model, "quantization": "Q4_K_M", "weight_format": "GGUF"},
        configuration={"speculative_type": spec, "parallel": 8},
        workload={"name": "space-invaders-html", "version": "1", "max_tokens": 64, "repetitions": 3},
        run={"status": "finished", "provenance": "measured"},
        samples=samples,
        concurrency_levels=levels,
    ).run


@pytest.fixture
def loaded_runs():
    mtp = _run("Qwen3.6-35B-A3B-MTP", "mtp", {1: 240.0, 2: 170.0, 4: 90.0, 8: 45.0})
    plain = _run("Qwen3.6-35B-A3B", "none", {1: 150.0, 2: 140.0, 4: 120.0, 8: 95.0})
    return mtp, plain


def _figure_traces(page, chart: str):
    return page.evaluate(
        # The legend's keys (one per run, no points) are not a pane's line.
        f"Array.from(document.getElementById('{chart}').data).filter(t => !(t.meta && t.meta.legend))"
        ".map(t => [t.meta && t.meta.pane, t.x, t.y, t.meta && t.meta.below_floor || null])"
    )


def test_the_concurrency_charts_overlay_runs_and_mark_the_floor(live_server, browser_page, screenshot_dir, loaded_runs):
    mtp, plain = loaded_runs
    page = browser_page
    page.goto(f"{live_server.url}/compare/?runs={mtp.pk},{plain.pk}")
    page.wait_for_selector("#concurrency-fig-chart[data-drawn=true]", timeout=20_000)
    traces = _figure_traces(page, "concurrency-fig-chart")
    # Four panes (aggregate, per stream, TTFT p90, J/token) × two runs, no floor yet.
    assert sorted({t[0] for t in traces}) == ["aggregate", "energy", "per_stream", "ttft"] and len(traces) == 8
    assert all(t[1] == [1, 2, 4, 8] for t in traces)
    per_stream = [t[2] for t in traces if t[0] == "per_stream"]
    assert per_stream[0][0] == pytest.approx(240.0, rel=0.02) and per_stream[1][3] == pytest.approx(95.0, rel=0.02)

    # The user picks a floor of 100 t/s per stream: the MTP run falls below it at 4 streams, the other at 8.
    page.fill("#id_floor", "100")
    page.click("#concurrency-form button[type=submit]")
    page.wait_for_url(re.compile(r".*floor=100.*"))
    page.wait_for_selector("#concurrency-fig-chart[data-drawn=true]", timeout=20_000)
    marks = [t[3] for t in _figure_traces(page, "concurrency-fig-chart") if t[3]]
    assert marks == [4, 8]
    assert page.locator("#concurrency-fig-chart .shapelayer path").count() >= 1  # the dashed floor line
    note = page.locator("#floor-note").inner_text()
    assert "falls below 100.0 t/s at 4 streams" in note and "at 8 streams" in note
    assert f"runs={mtp.pk}" in page.url and "runs=" in page.url
    page.screenshot(path=str(screenshot_dir / "compare-concurrency.png"), full_page=True)

    # Compare at one level: at 8 streams the run without MTP out-serves the MTP baseline.
    page.fill("#id_concurrency", "8")
    page.click("#concurrency-form button[type=submit]")
    page.wait_for_url(re.compile(r".*concurrency=8.*"))
    rows = page.locator("#at-level tbody tr")
    assert rows.count() == 2
    assert rows.nth(0).locator("td").nth(2).inner_text() == "0.0%"  # the baseline (a zero carries no sign)
    assert rows.nth(1).locator("td").nth(2).inner_text().startswith("+")
    assert "floor=100" in page.url  # the floor chosen before is kept

    # The leaderboard ranked at 8 streams puts the run without MTP first.
    page.goto(f"{live_server.url}/")
    page.fill("#id_rank_concurrency", "8")
    page.click("#concurrency-rank-form button[type=submit]")
    page.wait_for_url(re.compile(r".*concurrency=8.*"))
    ranked = page.locator("#concurrency-leaderboard tbody tr")
    assert ranked.count() == 2
    assert f"#{plain.pk}" in ranked.nth(0).inner_text() and f"#{mtp.pk}" in ranked.nth(1).inner_text()
    page.screenshot(path=str(screenshot_dir / "leaderboard-concurrency.png"), full_page=True)

    # A bad level is an error naming the parameter, not a 500.
    page.goto(f"{live_server.url}/?concurrency=0")
    assert "concurrency: must be between 1 and" in page.locator("#concurrency-board .error").inner_text()

    # The run page: latency percentiles of the single-stream repetitions and the run's own levels.
    page.goto(f"{live_server.url}/runs/{mtp.pk}/")
    page.wait_for_selector("#concurrency-fig-chart[data-drawn=true]", timeout=20_000)
    # TTFT p50/p90 stand in the run's headline figures; the latency card holds the rest.
    latency = page.locator("#latency").inner_text()
    assert "TTFT p99" in latency and "inter-token p99" in latency and "TTFT p90" not in latency
    assert page.locator("#ttft-p90").inner_text().startswith("TTFT p90")
    assert page.locator("#levels tbody tr").count() == 4
    page.screenshot(path=str(screenshot_dir / "run-concurrency.png"), full_page=True)

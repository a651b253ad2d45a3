"""The pages in a real browser: Debian's headless Chromium through Playwright,
against pytest-django's live server. Screenshots land in test-artifacts/."""

from __future__ import annotations

import re

import pytest

from leaderboard.results.services.published import published_import
from tests.fixtures.boards import SEED_004_REPS, samples_from, sweep_points

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

EVIL = "<script>alert(1)</script>"


@pytest.fixture
def site_data(board_run):
    samples = samples_from([t for t, _, _ in SEED_004_REPS])
    for sample, (_, drafted, accepted) in zip(samples, SEED_004_REPS, strict=True):
        sample["draft_n"], sample["draft_n_accepted"] = drafted, accepted
    mtp = board_run(samples=samples, sweep=sweep_points())
    nvfp4 = board_run(
        engine="vllm",
        build="nightly-40082",
        model="Nemotron-Elastic-30B-A3B",
        quant="NVFP4",
        spec="none",
        tps=[181.9, 182.4, 182.1, 182.2],
        sweep=sweep_points()[:4],
    )
    dense = board_run(model="Qwen3.6-27B-MTP", architecture="dense", tps=[74.1, 74.5, 74.2, 74.3])
    evil = board_run(
        rig=EVIL,
        gpus=[("RTX 3090 ☃", 6)],
        model="Qwen3.5-122B-A10B",
        quant="Q6_K_XL",
        spec="none",
        tps=[46.3, 45.9, 45.3],
        sweep=sweep_points(),
    )
    published_import()
    return {"mtp": mtp, "nvfp4": nvfp4, "dense": dense, "evil": evil}


def wait_for_charts(page, count: int) -> None:
    # A locator, not wait_for_function: Playwright polls a function string with eval,
    # which the site's Content-Security-Policy refuses (no 'unsafe-eval').
    page.locator("[data-drawn=true]").nth(count - 1).wait_for(state="attached", timeout=20_000)


def trace_count(page, chart_id: str) -> int:
    """Return the chart's traces with points: the legend's keys (one per run) are not counted."""
    return page.evaluate(f"document.getElementById('{chart_id}').data.filter(t => !(t.meta && t.meta.legend)).length")


def test_leaderboard_filter_run_and_compare_in_a_browser(live_server, browser_page, screenshot_dir, site_data) -> None:
    page = browser_page
    # Every workload in one ranking, asked for: the filters then keep that choice.
    page.goto(live_server.url + "/?workload=all")
    rows = page.locator("#leaderboard tbody tr")
    all_rows = rows.count()
    assert all_rows >= 4 + 10  # our four measured runs and the imported reported ones
    assert page.locator("#leaderboard .badge.reported").count() >= 1
    page.screenshot(path=str(screenshot_dir / "leaderboard.png"), full_page=True)

    # Apply a filter through the form: the URL carries it and the rows shrink.
    if page.locator("details.filters[open]").count() == 0:  # open already when the address has filters
        page.locator("details.filters summary").click()
    page.select_option("#id_spec", "mtp")
    page.select_option("#id_provenance", "measured")
    page.click("#filter-form button[type=submit]")
    page.wait_for_url(re.compile(r".*spec=mtp.*"))
    assert "provenance=measured" in page.url
    assert rows.count() == 2  # the MoE and the dense MTP runs
    page.screenshot(path=str(screenshot_dir / "leaderboard-filtered.png"), full_page=True)

    # Open the fastest run: its repetitions, acceptance and sweep charts draw.
    page.click(f"#leaderboard a[href='/runs/{site_data['mtp'].pk}/'] >> nth=0")
    page.wait_for_url(re.compile(rf".*/runs/{site_data['mtp'].pk}/"))
    wait_for_charts(page, 3)
    assert page.locator("#reps-chart svg.main-svg").count() >= 1
    assert trace_count(page, "reps-chart") == 2  # repetitions + mean line
    assert trace_count(page, "accept-chart") == 1
    assert trace_count(page, "sweep-fig-chart") == 7  # seed 001's panes
    assert page.locator("#sweep-fig-chart .cartesianlayer .subplot").count() == 7
    page.screenshot(path=str(screenshot_dir / "run.png"), full_page=True)

    # Compare: tick two runs on the leaderboard and submit.
    page.goto(live_server.url + "/?provenance=measured")
    page.check(f"input[name=runs][value='{site_data['mtp'].pk}']")
    page.check(f"input[name=runs][value='{site_data['nvfp4'].pk}']")
    page.click("#compare-form button[type=submit]")
    page.wait_for_url(re.compile(r".*/compare/.*"))
    wait_for_charts(page, 2)
    assert page.locator("#compare tbody tr").count() == 2
    assert "p" in page.locator("#compare thead").inner_text()
    assert page.locator("#compare td.pvalue").nth(1).inner_text().strip() not in ("", "–")
    assert page.locator("#key-warning").is_visible()  # different model files
    assert trace_count(page, "dist-chart") == 2
    assert trace_count(page, "sweep-fig-chart") == 14  # two runs × seven panes
    page.screenshot(path=str(screenshot_dir / "compare.png"), full_page=True)


def test_hostile_names_render_as_text_in_tables_and_hover(live_server, browser_page, screenshot_dir, site_data) -> None:
    page = browser_page
    evil = site_data["evil"]
    page.goto(f"{live_server.url}/runs/{evil.pk}/")
    wait_for_charts(page, 2)

    assert EVIL in page.locator("h1 + p.lede").inner_text()
    # Hover the first repetition: Plotly shows the text with its unit, and nothing runs.
    page.locator("#reps-chart .scatterlayer .point").first.hover(force=True)
    page.wait_for_selector("#reps-chart .hoverlayer .hovertext", timeout=5_000)
    assert "t/s" in page.locator("#reps-chart .hoverlayer .hovertext").text_content()

    # The compare page's hover text names the run, rig name included, as plain text.
    page.goto(f"{live_server.url}/compare/?runs={evil.pk},{site_data['dense'].pk}")
    wait_for_charts(page, 1)
    page.locator("#dist-chart .scatterlayer .point").first.hover(force=True)
    page.wait_for_selector("#dist-chart .hoverlayer .hovertext", timeout=5_000)
    hover = page.locator("#dist-chart .hoverlayer .hovertext").text_content()
    assert EVIL in hover and "t/s" in hover
    assert page.locator("#dist-chart script").count() == 0

    page.goto(f"{live_server.url}/rigs/{evil.rig_id}/")
    wait_for_charts(page, 1)
    assert EVIL in page.locator("h1").inner_text()
    assert "RTX 3090 ☃" in page.locator("dl.facts").inner_text()
    page.screenshot(path=str(screenshot_dir / "rig-hostile-name.png"), full_page=True)


def test_pages_fit_a_phone_screen(live_server, chromium, screenshot_dir, site_data) -> None:
    context = chromium.new_context(viewport={"width": 390, "height": 844}, device_scale_factor=2, is_mobile=True)
    page = context.new_page()
    try:
        page.goto(live_server.url + "/")
        # The table scrolls inside its wrapper; the page itself does not scroll sideways.
        assert page.evaluate("document.documentElement.scrollWidth") <= 390 + 1
        page.screenshot(path=str(screenshot_dir / "phone-leaderboard.png"), full_page=True)

        page.goto(f"{live_server.url}/runs/{site_data['mtp'].pk}/")
        wait_for_charts(page, 3)
        assert page.evaluate("document.documentElement.scrollWidth") <= 390 + 1
        # The six-pane sweep turns into one column on a phone.
        assert page.evaluate("document.getElementById('sweep-fig-chart').layout.grid.columns") == 1
        page.screenshot(path=str(screenshot_dir / "phone-run.png"), full_page=True)
        page.locator("#sweep-fig-chart").screenshot(path=str(screenshot_dir / "phone-sweep-chart.png"))
    finally:
        context.close()


def test_published_pages_draw_in_a_browser(live_server, browser_page, screenshot_dir, site_data) -> None:
    page = browser_page
    page.goto(live_server.url + "/published/comparisons/")
    page.click("text=WOW Moment: Key Findings")
    wait_for_charts(page, 1)
    table = page.locator("#published-rows").inner_text()
    assert "Claude Haiku" in table and "$150" in table
    page.screenshot(path=str(screenshot_dir / "published-comparison.png"), full_page=True)

    page.goto(live_server.url + "/published/experiments/")
    wait_for_charts(page, 1)
    assert "29.899" in page.locator("table.experiments").first.inner_text()  # as printed
    page.screenshot(path=str(screenshot_dir / "experiments.png"), full_page=True)

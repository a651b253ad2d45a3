"""Issue 12 in a real browser (Debian's headless Chromium through Playwright) at
1400 px and at 390 px: for each fault, what a person would see. Screenshots go
to test-artifacts/site-*.png. Every page is also checked for JavaScript and
console errors (the browser_page and phone_page fixtures fail the test on any)."""

from __future__ import annotations

import pytest

from leaderboard.results.models import PublishedComparison, Run
from leaderboard.results.services.published import published_import
from tests.fixtures.boards import samples_from

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SIX_3090 = "six-3090-qwen35-122b-a10b-q6kxl-ctx-sweep"


@pytest.fixture
def demo(board_run):
    """The demo's published data plus seven measured runs of one configuration
    (one with a failed output check), as `make demo` plus a rig's own runs."""
    published_import()
    # The first three are one configuration run three times: its run-to-run spread is measured.
    builds = ["b0", "b0", "b0", "b3", "b4", "b5"]
    measured = [board_run(tps=[100.0 + i, 101.0 + i, 99.5 + i], build=b) for i, b in enumerate(builds)]
    broken = samples_from([400.0, 401.0])
    broken[0]["output_ok"] = False
    measured.append(board_run(samples=broken, build="broken"))
    return {"measured": measured, "sweep": Run.objects.get(report_key=SIX_3090)}


def inside_viewport(page, selector: str) -> bool:
    box = page.locator(selector).first.bounding_box()
    width = page.viewport_size["width"]
    return box is not None and box["x"] >= 0 and box["x"] + box["width"] <= width + 0.5


def no_sideways_scroll(page, selector: str = ".table-wrap") -> bool:
    return page.evaluate(
        f"[...document.querySelectorAll('{selector}')].every(e => e.scrollWidth <= e.clientWidth + 1)"
        " && document.documentElement.scrollWidth <= window.innerWidth + 1"
    )


def wait_for_charts(page, count: int) -> None:
    # A locator, not wait_for_function: Playwright polls a function string with eval,
    # which the site's Content-Security-Policy refuses (no 'unsafe-eval').
    page.locator("[data-drawn=true]").nth(count - 1).wait_for(state="attached", timeout=20_000)


def test_the_leaderboard_shows_what_matters_at_1400_px(live_server, browser_page, screenshot_dir, demo) -> None:
    page = browser_page
    # The published runs span workloads: the sweep's is not the one with the most runs.
    page.goto(live_server.url + "/?workload=all")
    # The chart view loads Plotly only when opened.
    assert page.evaluate("typeof window.Plotly") == "undefined"
    page.click("#chart-view summary")
    wait_for_charts(page, 1)
    assert page.evaluate("document.getElementById('board-chart').data.length") >= 1

    assert no_sideways_scroll(page, "#leaderboard")
    for column in ("col-power", "col-tpkwh", "col-cost", "col-source", "col-vram"):
        assert inside_viewport(page, f"#leaderboard th.{column}"), column
    # Item 1: the six-3090 sweep is listed, with its marker.
    row = page.locator(f"#leaderboard tr:has(input[value='{demo['sweep'].pk}'])")
    assert row.locator(".badge.sweep").is_visible()
    assert "46.30" in row.locator("td.col-decode").inner_text()
    # Statistics: the broken run is not ranked until asked for.
    assert page.locator(f"input[value='{demo['measured'][-1].pk}']").count() == 0
    assert "Ranked by Decode t/s" in page.locator("#ranked-by").inner_text()
    page.screenshot(path=str(screenshot_dir / "site-leaderboard-1400.png"), full_page=True)

    page.click("#show-failed")
    page.wait_for_url("**failed=on**")
    broken = page.locator(f"#leaderboard tr:has(input[value='{demo['measured'][-1].pk}'])")
    assert broken.locator(".badge.failed").is_visible()

    # Item 3: a blank column sorts blanks last and says what the order is.
    page.goto(live_server.url + "/?workload=all&sort=-tpkwh")
    assert "Ranked by Tokens/kWh" in page.locator("#ranked-by").inner_text()
    first = page.locator("#leaderboard tbody tr").first.locator("td.col-tpkwh").inner_text()
    assert first.strip() not in ("", "–")


def test_a_phone_sees_rank_stack_and_speed_without_scrolling_sideways(
    live_server, phone_page, screenshot_dir, demo
) -> None:
    page = phone_page
    page.goto(live_server.url + "/")

    assert no_sideways_scroll(page)
    for cell in ("td.rank", "td.col-model", "td.col-decode"):
        assert inside_viewport(page, f"#leaderboard tbody tr:first-child {cell}"), cell
    assert page.locator("#leaderboard tbody tr:first-child td.col-model .phone-only").is_visible()  # engine · rig
    assert not page.locator("#leaderboard tbody tr:first-child td.col-power").is_visible()
    page.screenshot(path=str(screenshot_dir / "site-leaderboard-390.png"), full_page=True)

    page.click("#all-columns")
    assert page.locator("#leaderboard tbody tr:first-child td.col-power").is_visible()
    assert page.evaluate("document.documentElement.scrollWidth") <= 390 + 1  # the table scrolls, not the page

    page.goto(f"{live_server.url}/runs/{demo['sweep'].pk}/")
    wait_for_charts(page, 1)
    assert no_sideways_scroll(page, "body")
    page.screenshot(path=str(screenshot_dir / "site-sweep-run-390.png"), full_page=True)

    page.goto(f"{live_server.url}/compare/?runs=" + ",".join(str(r.pk) for r in demo["measured"][:6]))
    wait_for_charts(page, 1)
    assert page.evaluate("document.documentElement.scrollWidth") <= 390 + 1
    assert inside_viewport(page, "#compare tbody tr:first-child td:nth-child(2)")  # its speed
    assert inside_viewport(page, "#compare tbody tr:nth-child(2) td.verdict")
    ticks = page.evaluate("document.getElementById('dist-chart').layout.xaxis.ticktext")
    assert all("<br>" not in t for t in ticks)
    page.screenshot(path=str(screenshot_dir / "site-compare-6-390.png"), full_page=True)


def test_the_six_3090_rig_page_and_sweep(live_server, browser_page, screenshot_dir, demo) -> None:
    page = browser_page
    sweep = demo["sweep"]
    page.goto(f"{live_server.url}/rigs/{sweep.rig_id}/")
    wait_for_charts(page, 1)
    assert "No finished runs yet" not in page.locator("main").inner_text()
    assert page.locator(f"table.rows a[href='/runs/{sweep.pk}/']").first.is_visible()
    page.screenshot(path=str(screenshot_dir / "site-six-3090-rig.png"), full_page=True)

    page.goto(f"{live_server.url}/runs/{sweep.pk}/")
    wait_for_charts(page, 1)
    first_row = page.locator("#sweep tbody tr").first.locator("td")
    assert first_row.nth(0).inner_text() == "4K"
    assert page.locator("#sweep tbody tr").last.locator("td").nth(0).inner_text() == "198K"
    assert page.locator("#sweep tbody tr").last.locator("td.delta").nth(1).inner_text() == "-27.4%"
    points = page.evaluate(
        "document.getElementById('sweep-fig-chart').data.filter(t => !(t.meta && t.meta.legend)).map(t => t.x.length)"
    )
    assert points == [7] * 7  # 198K in every pane
    titles = page.locator("#sweep-fig-chart .annotation-text").all_text_contents()
    assert "Efficiency vs context" in titles and "Power range vs context" in titles
    cards = page.locator("dl.stats dd").all_inner_texts()
    assert cards and all(c.strip() not in ("–", "– %") for c in cards)  # no cards of dashes
    page.screenshot(path=str(screenshot_dir / "site-sweep-run-1400.png"), full_page=True)


def test_compare_six_runs_reads_and_a_seventh_is_named(live_server, browser_page, screenshot_dir, demo) -> None:
    page = browser_page
    runs = demo["measured"]
    page.goto(f"{live_server.url}/runs/{runs[0].pk}/")
    # Compare my run against these: the runs with its comparison key.
    page.click("#compare-peers")
    page.wait_for_url("**/compare/**")
    wait_for_charts(page, 1)
    assert page.locator("#compare tbody tr").count() == 6

    plot = page.locator("#dist-chart .draglayer .nsewdrag").first.bounding_box()
    assert plot["height"] > 200 and plot["width"] > 900  # not squashed
    assert page.locator("#dist-chart .legend").count() == 0
    ticks = page.evaluate(
        "[...document.querySelectorAll('#dist-chart .xtick text')].map(t => t.getBoundingClientRect())"
        ".map(r => [r.left, r.right])"
    )
    assert len(ticks) == 6 and all(a[1] <= b[0] for a, b in zip(ticks, ticks[1:], strict=False))  # no overlap
    verdicts = page.locator("#compare td.verdict").all_inner_texts()
    assert any("run-to-run" in v for v in verdicts)
    page.screenshot(path=str(screenshot_dir / "site-compare-6-1400.png"), full_page=True)

    page.goto(f"{live_server.url}/compare/?runs=" + ",".join(str(r.pk) for r in runs))
    assert f"#{runs[6].pk}" in page.locator("#dropped").inner_text()
    page.fill("#add-run-id", str(runs[0].pk))
    page.click("#add-run button[type=submit]")
    page.wait_for_url("**add=**")
    assert page.locator("#compare tbody tr").count() == 6


def test_provenance_experiments_and_error_pages(
    live_server, browser_page, chromium, screenshot_dir, demo, settings
) -> None:
    page = browser_page
    for comparison in PublishedComparison.objects.all():
        page.goto(f"{live_server.url}/published/comparisons/{comparison.pk}/")
        lede = page.locator("#from").inner_text()
        assert "From ." not in lede and lede.strip() != "reported From"
    olares = PublishedComparison.objects.get(title="The new Olares One leaderboard")
    page.goto(f"{live_server.url}/published/comparisons/{olares.pk}/")
    assert "182.14" in page.locator("#published-rows").inner_text()
    page.click("#from a.source-page")
    page.wait_for_url("**/published/sources/**")
    assert page.locator("h1").inner_text().endswith("An article by aamsellem")

    page.goto(live_server.url + "/published/experiments/")
    wait_for_charts(page, 2)
    assert "α = 4.247" in page.locator("main").inner_text()
    traces = page.evaluate("document.getElementById('journey-1-chart').data.map(t => [t.name, t.y])")
    assert traces[0][1][-1] == 29.899 and traces[1] == ["side test (not a phase)", [3.7]]
    page.screenshot(path=str(screenshot_dir / "site-experiments.png"), full_page=True)

    assert page.goto(live_server.url + "/favicon.ico").status == 200

    # A 404 is logged by the browser as a failed load: a page of its own, not watched for errors.
    settings.DEBUG = False
    context = chromium.new_context(viewport={"width": 1400, "height": 900})
    try:
        missing = context.new_page()
        response = missing.goto(live_server.url + "/no/such/page/")
        assert response.status == 404
        assert missing.locator("h1").inner_text() == "Page not found"
        assert "URL patterns" not in missing.locator("body").inner_text()
        missing.screenshot(path=str(screenshot_dir / "site-404.png"))
    finally:
        context.close()


def test_no_page_logs_a_console_error(live_server, browser_page, demo) -> None:
    page = browser_page
    run = demo["measured"][0]
    sweep = demo["sweep"]
    paths = [
        "/",
        "/?failed=on&sort=-tpkwh",
        f"/rigs/{sweep.rig_id}/",
        f"/runs/{run.pk}/",
        f"/runs/{sweep.pk}/",
        "/compare/?runs=" + ",".join(str(r.pk) for r in demo["measured"][:6]),
        f"/sweeps/?runs={sweep.pk}",
        "/gpus/RTX 3090/",
        f"/models/{sweep.model_file_id}/",
        f"/published/sources/{sweep.source_id}/",
        "/published/comparisons/",
        "/published/experiments/",
    ]
    for path in paths:
        response = page.goto(live_server.url + path)
        assert response.status == 200, path
        page.wait_for_load_state("load")
        # Every asset is served here: no request leaves the service.
        hosts = page.evaluate("[...performance.getEntriesByType('resource')].map(e => new URL(e.name).host)")
        assert set(hosts) <= {live_server.url.split("//")[1]}, (path, hosts)


def bar_labels_inside(page, chart: str) -> list[str]:
    """Assert each category label of the horizontal bar chart ``chart`` lies inside its
    svg and apart from the others; return the labels' text."""
    svg = page.locator(f"#{chart} svg.main-svg").first.bounding_box()
    labels = page.locator(f"#{chart} .yaxislayer-above .ytick text")
    boxes = [labels.nth(i).bounding_box() for i in range(labels.count())]
    texts = labels.all_text_contents()
    for box, text in zip(boxes, texts, strict=True):
        assert box["x"] >= svg["x"] - 0.5 and box["x"] + box["width"] <= svg["x"] + svg["width"] + 0.5, text
    # Wrapped labels do not run into each other.
    ordered = sorted(boxes, key=lambda b: b["y"])
    for upper, lower in zip(ordered, ordered[1:], strict=False):
        assert upper["y"] + upper["height"] <= lower["y"] + 0.5
    return texts


def test_a_phone_reads_every_bar_label_of_a_gpu_page(live_server, phone_page, screenshot_dir, demo, board_run) -> None:
    # A long model name, stack and rig: the label a 390 px chart used to cut at its left edge.
    board_run(
        rig="a very long rig name with two RTX 3090 cards in it",
        gpus=[("RTX 3090", 2)],
        model="Nemotron-Elastic-30B-A3B-Instruct-Reasoning",
        build="master-0123456789abcdef",
        engine="ik_llama.cpp",
    )
    page = phone_page
    page.goto(live_server.url + "/gpus/RTX 3090/")
    wait_for_charts(page, 1)
    page.screenshot(path=str(screenshot_dir / "site-gpu-bars-390.png"), full_page=True)

    assert len(bar_labels_inside(page, "scope-bars-chart")) >= 3
    # What a shortened label leaves out is in its bar's hover text.
    hover = page.evaluate("document.getElementById('scope-bars-chart').data[0].hovertext")
    assert any("Nemotron-Elastic-30B-A3B-Instruct-Reasoning" in h for h in hover)
    assert any("a very long rig name with two RTX 3090 cards in it" in h for h in hover)

    page.goto(f"{live_server.url}/rigs/{demo['sweep'].rig_id}/")  # the six-3090 rig's bars
    wait_for_charts(page, 1)
    assert bar_labels_inside(page, "rig-bars-chart")

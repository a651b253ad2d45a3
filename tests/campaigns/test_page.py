"""The campaign page in Debian's Chromium at desktop and phone width: progress,
best-so-far chart, parallel coordinates, a sortable trial table, failures with
their cause and log tail, the fit drawn over its points beside seed 003's
published one, the Pareto chart with its front named, and the recommendation's
command line; no console error, no sideways scroll at 390 px."""

from __future__ import annotations

import pytest

from leaderboard.campaigns.models import Campaign
from leaderboard.campaigns.services import campaign_create, trial_record

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def campaign(make_rig) -> Campaign:
    rig = make_rig(name="page-rig")
    stored = campaign_create(
        rig=rig,
        data={
            "name": "threads <b>sweep</b>",
            "strategy": "grid",
            "space": {"threads": [1, 2, 4, 8, 16], "ctx_size": [2048, 20000000]},
            "budget": {"trials": 8},
            "base_config": {"server": {"model": "/models/gemma.gguf", "spec_type": "none"}},
        },
    )
    measured = {1: [10.0, 10.4], 2: [19.0, 19.5], 4: [33.0, 34.0], 8: [41.0, 40.0], 16: [3.7, 3.9]}
    number = 0
    for threads, samples in measured.items():
        number += 1
        trial_record(campaign=stored, data={
            "number": number, "params": {"threads": threads, "ctx_size": 2048}, "state": "complete",
            "value": sum(samples) / 2, "samples": samples, "duration_s": 9.0, "measured_s": 3.0,
            "metrics": {"perplexity": 27.9, "vram_peak_mib": None},
        })  # fmt: skip
    trial_record(campaign=stored, data={
        "number": number + 1, "params": {"threads": 2, "ctx_size": 20000000}, "state": "failed",
        "failure_kind": "out_of_memory", "failure_reason": "failed to allocate <script>alert(1)</script>",
        "log_tail": "E ggml_backend_cpu_buffer_type_alloc_buffer: failed to allocate buffer",
    })  # fmt: skip
    return stored


@pytest.mark.parametrize("width", [1400, 390])
def test_the_campaign_page_shows_the_search_at_desktop_and_phone_width(
    campaign, live_server, browser_page, screenshot_dir, width
):
    page = browser_page
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(f"{live_server.url}/campaigns/{campaign.pk}/")
    assert page.locator("h1").inner_text() == "threads <b>sweep</b>"
    assert page.locator(".trials-done").inner_text() == "6 of 8"
    page.wait_for_selector("#best-so-far-chart .main-svg", timeout=15000)
    page.wait_for_selector("#fit-threads-chart .main-svg", timeout=15000)
    page.wait_for_selector("#parallel-chart .main-svg", timeout=15000)
    page.wait_for_selector("#pareto-chart .main-svg", timeout=15000)
    for chart in ("best-so-far", "parallel", "fit-threads", "pareto"):
        box = page.locator(f"#{chart}-chart").bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= width + 1, (chart, box)
    # The fit: its formula and R² in words. The 16-thread trap is no power law: the fit is
    # flagged with its worst miss and only the points are drawn (one trace), no curve.
    fit = page.locator("li.fit[data-parameter='threads']")
    assert "R² = " in fit.inner_text() and "n = 5" in fit.inner_text()
    assert "(C − x)^" in fit.inner_text() or "·x^" in fit.inner_text()
    assert "fit-poor" in (fit.get_attribute("class") or "")
    assert "does not explain these points" in fit.inner_text() and "was measured" in fit.inner_text()
    assert page.locator("#fit-threads-chart .scatterlayer .trace").count() == 1
    published = page.locator(".published-fit").inner_text()
    assert "9.81e-06·(42 − x)^4.247" in published and "cannot refit" in published
    # The Pareto front: only trial 4 (8 threads) — same perplexity, no VRAM, fastest —
    # named in words and labelled with its parameters on the chart.
    assert page.locator("ul.pareto-summary li").first.inner_text().startswith("Trial 4 (threads=8, ctx_size=2048)")
    assert "threads=8" in (page.locator("#pareto-chart .textpoint").first.text_content() or "")
    assert page.locator("table.trials tr.trial-pareto").count() == 1
    assert "failed to allocate buffer" in (page.locator("details.log-tail").text_content() or "")
    assert "out of memory" in page.locator("ul.failures").inner_text()
    assert page.locator(".failure-boundary").inner_text().startswith("ctx_size ≥ 20000000 failed (out of memory)")
    assert "9.81e-06" in page.locator(".published-fit").inner_text()
    assert "--threads 8" in page.locator(".command-line").inner_text()
    assert "threads = 8" in page.locator(".server-toml").inner_text()
    # The 16-thread trap stands out in the effects table.
    trap = page.locator("table.effects tbody tr").filter(has=page.locator("td:nth-child(2)", has_text="16"))
    assert trap.count() == 1 and "effect-significant" in (trap.get_attribute("class") or "")
    assert float(trap.locator("td").nth(4).inner_text()) < -80
    assert page.locator("ul.effect-highlights li").first.inner_text().startswith("threads = 16: -")

    # Sort by the objective column, best first.
    objective = page.locator("table.trials thead th", has_text="decode t/s")
    objective.click()
    first = page.locator("table.trials tbody tr").first.locator("td").first.inner_text()
    assert first == "4"  # trial 4: 8 threads, 40.5 t/s
    objective.click()
    assert page.locator("table.trials tbody tr").first.locator("td").first.inner_text() == "5"

    overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 1, f"the page scrolls sideways by {overflow} px at {width} px"
    page.screenshot(path=str(screenshot_dir / f"campaign-{width}.png"), full_page=True)
    for chart in ("pareto", "fit-threads"):
        page.locator(f"#{chart}-chart").screenshot(path=str(screenshot_dir / f"campaign-{width}-{chart}.png"))


def test_seed_003s_phases_have_one_page_the_old_reported_campaign_address_redirects_to(client, db):
    """The reported campaign showed the experiments page's phases again (29.90 there,
    29.899 here): one page per thing, the experiments page's section for the source."""
    from django.core.management import call_command

    from leaderboard.results.models import Source

    call_command("import_published", verbosity=0)
    source = Source.objects.get(key__startswith="003")
    listing = client.get("/campaigns/").content.decode()
    assert f"/published/experiments/#source-{source.id}" in listing
    old = client.get(f"/campaigns/reported/{source.id}/")
    assert old.status_code == 301 and old["Location"] == f"/published/experiments/#source-{source.id}"
    page = client.get("/published/experiments/").content.decode()
    assert f'id="source-{source.id}"' in page
    assert "First GPU Offload Sweep" in page and ">11.850<" in page and ">29.899<" in page  # as printed
    assert "9.81e-6 * (42 - model_size_gb)^4.247" in page
    assert "9.81e-06·(42 − x)^4.247" in page and "neither reproduce nor refute" in page
    other = Source.objects.filter(experiments__isnull=True).first()
    assert client.get(f"/campaigns/reported/{other.id}/").status_code == 404  # a source without phases


def test_the_page_names_the_pareto_optimal_model_files(make_rig, client):
    """Three quantizations of one model, seed 003's kind of result: IQ2_M is slower
    than IQ2_XXS and better in quality (both on the front), Q3_K_M is beaten by
    IQ2_M on all three axes, and a fast trial whose output check failed stays off."""
    stored = campaign_create(
        rig=make_rig(name="pareto-rig"),
        data={
            "name": "quantizations",
            "strategy": "grid",
            "space": {"model": ["/m/q3_k_m.gguf", "/m/iq2_m.gguf", "/m/iq2_xxs.gguf"], "threads": [8, 16]},
            "base_config": {"server": {"model": "/m/q3_k_m.gguf", "spec_type": "none"}},
        },
    )
    rows = [
        ("/m/q3_k_m.gguf", 8, 12.3, 1.3150, 7900, 1.0),
        ("/m/iq2_m.gguf", 8, 21.6, 1.3138, 7600, 1.0),
        ("/m/iq2_xxs.gguf", 8, 29.9, 1.3300, 7500, 1.0),
        ("/m/iq2_xxs.gguf", 16, 35.0, 1.3300, 7400, 0.0),  # fastest, but its answers failed the check
    ]
    for number, (model, threads, tps, ppl, vram, ok) in enumerate(rows, 1):
        trial_record(campaign=stored, data={
            "number": number, "params": {"model": model, "threads": threads}, "state": "complete",
            "value": tps, "samples": [tps, tps], "duration_s": 9.0, "measured_s": 3.0,
            "metrics": {"perplexity": ppl, "vram_peak_mib": vram, "output_ok_fraction": ok},
        })  # fmt: skip
    page = client.get(f"/campaigns/{stored.pk}/").content.decode()
    assert "Pareto-optimal model files: iq2_m.gguf, iq2_xxs.gguf; every trial of q3_k_m.gguf is dominated." in page
    assert "Trial 2 (model=iq2_m.gguf, threads=8): 21.6 decode t/s, perplexity 1.314" in page
    assert "Trial 4 (" not in page
    assert "perplexity (lower is better)" in page  # the chart's x axis: every trial has one

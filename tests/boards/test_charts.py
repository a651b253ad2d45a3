"""boards/charts/: pure figure builders; their shape, units and escaping."""

from __future__ import annotations

import json

import pytest

from leaderboard.boards.charts.bars import BarItem, bar_figure
from leaderboard.boards.charts.distributions import DistributionSeries, distributions_figure
from leaderboard.boards.charts.power_law import power_law_figure
from leaderboard.boards.charts.repetitions import RepetitionData, acceptance_figure, repetitions_figure
from leaderboard.boards.charts.steps import StepData, steps_figure
from leaderboard.boards.charts.sweep import SweepPointData, SweepSeries, sweep_figure
from tests.fixtures.boards import SEED_001_SWEEP


def seed_001_series(label: str = "six 3090s") -> SweepSeries:
    return SweepSeries(
        label=label,
        points=[
            SweepPointData(ctx, lab, prefill, decode, ttft, power, tpkwh)
            for ctx, lab, prefill, decode, ttft, power, tpkwh in SEED_001_SWEEP
        ],
    )


def test_the_sweep_figure_has_seed_001s_panes_on_a_log_context_axis() -> None:
    figure = sweep_figure([seed_001_series()])

    # Seed 001's own panes, "efficiency vs context" and "power range" among them; the
    # run's legend key first, then one line per pane, each named for its pane.
    key, *lines = figure["data"]
    assert key["meta"] == {"legend": True} and key["name"] == "six 3090s" and key["x"] == [None]
    assert len(lines) == 7 and len({t["name"] for t in figure["data"]}) == 8
    assert not any(t["showlegend"] for t in lines)
    titles = [a["text"] for a in figure["layout"]["annotations"]]
    assert "<b>Efficiency vs context</b>" in titles and "<b>Power range vs context</b>" in titles
    assert figure["layout"]["grid"] == {"rows": 4, "columns": 2, "pattern": "independent", "ygap": 0.45, "xgap": 0.15}
    assert [figure["layout"][f"xaxis{s}"]["type"] for s in ("", "2", "3", "4", "5", "6")] == ["log"] * 6
    assert figure["layout"]["xaxis7"]["type"] == "linear"  # efficiency against power
    decode = lines[1]
    assert decode["name"] == "six 3090s: Decode vs context"
    assert decode["y"] == [46.3, 45.9, 45.3, 43.9, 41.2, 37.1, 33.6]
    assert decode["hovertext"][0] == "six 3090s<br>4K context<br>decode t/s: 46.3 t/s"
    assert lines[6]["x"] == [818, 831, 828, 831, 838, 842, 856]
    assert "power: 818 W" in lines[6]["hovertext"][0]
    assert lines[4]["y"][0] == pytest.approx(46.3 / 818)  # decode t/s per W
    # Enough digits that the pane's values differ: 0.057 and 0.039 t/s per W, not 0.1 and 0.0.
    assert "t/s per W: 0.057 t/s per W" in lines[4]["hovertext"][0]
    assert "t/s per W: 0.039 t/s per W" in lines[4]["hovertext"][-1]


def test_the_sweep_figure_overlays_several_runs_and_skips_empty_panes() -> None:
    decode_only = SweepSeries("decode only", [SweepPointData(4096, decode_tokens_per_s=10.0)])

    figure = sweep_figure([seed_001_series("a"), seed_001_series("b"), decode_only])
    only = sweep_figure([decode_only])

    keys = [t for t in figure["data"] if t.get("meta", {}).get("legend")]
    assert [k["name"] for k in keys] == ["a", "b", "decode only"]  # the legend names each run once
    assert len(figure["data"]) == 3 + 21 and len({t["name"] for t in figure["data"]}) == 24
    assert len(only["data"]) == 2 and only["layout"]["grid"]["rows"] == 1
    assert sweep_figure([])["data"] == []


def test_every_user_string_is_escaped_in_figures() -> None:
    evil = "<img src=x onerror=alert(1)>"
    figures = [
        sweep_figure([seed_001_series(evil)]),
        repetitions_figure(evil, [RepetitionData(1, 10.0, 80.0, False)], mean=10.0),
        bar_figure([BarItem(evil, 10.0, 1.0, detail=evil)]),
        distributions_figure([DistributionSeries(evil, [1.0, 2.0]), DistributionSeries(evil, [], 3)]),
        steps_figure([StepData(evil, 6.1, evil)]),
    ]

    blob = json.dumps(figures)

    assert "<img" not in blob
    assert "&lt;img src=x onerror=alert(1)&gt;" in blob


def test_repetitions_mark_failed_checks_and_acceptance_has_units() -> None:
    reps = [RepetitionData(1, 253.73, 89.0, True), RepetitionData(2, 248.63, 86.2, False)]

    strip = repetitions_figure("run", reps, mean=251.18)
    accept = acceptance_figure(reps)

    assert strip["data"][0]["marker"]["symbol"] == ["circle", "x"]
    assert "output check failed" in strip["data"][0]["hovertext"][1]
    assert strip["data"][1]["y"] == [251.18, 251.18]
    assert accept["data"][0]["hovertext"][0] == "repetition 1<br>accept: 89.0 %"
    assert acceptance_figure([RepetitionData(1, 10.0)])["data"] == []


def test_the_bar_figure_keeps_the_ranking_order_with_error_bars() -> None:
    figure = bar_figure(
        [
            BarItem("Qwen3.6 35B-A3B MTP", 249.30, 3.0),
            BarItem("no figure", None),
            BarItem("Nemotron NVFP4", 182.14),
        ]
    )

    bar = figure["data"][0]
    assert bar["y"] == ["1. Qwen3.6 35B-A3B MTP", "2. Nemotron NVFP4"]
    assert bar["error_x"]["array"] == [3.0, 0]
    assert bar["hovertext"][0] == "Qwen3.6 35B-A3B MTP<br>249.30 t/s ± 3.00 t/s (σ)"
    assert figure["layout"]["yaxis"]["autorange"] == "reversed"


def test_bars_of_several_workloads_are_labelled_and_coloured_by_their_workload() -> None:
    """A GPU page's stack measured on two workloads: two bars alike but for the workload.
    Each label ends with it, each workload has one colour and a legend entry, and the
    ranking order holds across the groups (oracle: the items' own order)."""
    items = [
        BarItem("Llama 3 8B Q4_K_M · llama.cpp · rig-a", 120.0, group="llama-bench tg512 v1"),
        BarItem("Llama 3 8B Q4_K_M · llama.cpp · rig-a", 110.0, group="llama-bench tg1024 v1"),
        BarItem("Qwen 7B · vLLM · rig-b", 90.0, group="llama-bench tg512 v1"),
    ]
    figure = bar_figure(items)
    names = [trace["name"] for trace in figure["data"]]
    assert names == ["llama-bench tg512 v1", "llama-bench tg1024 v1"] and figure["layout"]["showlegend"]
    labels = [y for trace in figure["data"] for y in trace["y"]]
    assert len(set(labels)) == 3 and all(label.endswith(" v1") for label in labels)
    assert figure["layout"]["yaxis"]["categoryarray"] == [
        f"{i}. {item.label} · {item.group}" for i, item in enumerate(items, 1)
    ]
    colours = [trace["marker"]["color"] for trace in figure["data"]]
    assert len(set(colours)) == 2  # a colour per workload, not per bar
    single = bar_figure([BarItem("a", 2.0), BarItem("b", 1.0)])
    assert len(single["data"]) == 1 and not single["layout"]["showlegend"]
    assert isinstance(single["data"][0]["marker"]["color"], str)  # one colour: nothing to tell apart


def test_the_distribution_figure_jitters_deterministically() -> None:
    series = [DistributionSeries("a", [1.0, 2.0, 3.0])]

    assert distributions_figure(series) == distributions_figure(series)
    xs = distributions_figure(series)["data"][0]["x"]
    assert all(-0.2 < x < 0.2 for x in xs) and len(set(xs)) == 3


def test_the_pane_grid_gives_each_pane_its_axes_and_title_and_one_row_when_empty() -> None:
    from leaderboard.core.charts import pane_grid

    panes = [(f"<b>p{i}</b>", {"type": "log"}, {"rangemode": "tozero"}) for i in range(1, 6)]
    layout, suffixes = pane_grid(panes, columns=2, shapes=[])
    empty, none = pane_grid([], columns=2)

    assert suffixes == ["", "2", "3", "4", "5"]
    assert layout["grid"]["rows"] == 3 and layout["height"] == 3 * 280 + 60
    assert layout["xaxis5"] == {"type": "log"} and "xaxis6" not in layout
    assert [a["text"] for a in layout["annotations"]] == [p[0] for p in panes]
    assert layout["annotations"][1]["xref"] == "x2 domain" and layout["shapes"] == []
    assert none == [] and empty["grid"]["rows"] == 1 and empty["annotations"] == []


def test_a_printed_fit_and_a_campaigns_fit_draw_one_curve() -> None:
    """The experiments page's printed law and a campaign's fitted one go through the
    one power-law drawing: the same law over the same x gives the same y, and it is
    the formula's value (oracle: the arithmetic written out here)."""
    from leaderboard.campaigns.charts import fit_figure
    from leaderboard.core.fits import CEILING, printed_fit

    law = printed_fit("tok/s = 9.81e-6 * (42 - model_size_gb)^4.247")
    assert law is not None
    printed = power_law_figure(law, label="<b>fit</b>")["data"][0]
    fitted = {**law.as_dict(), "r2": 0.9, "formula": law.formula(), "alternative": None,
              "points": [{"x": 0.0, "y": 1.0}, {"x": 42.0, "y": 1.0}]}  # fmt: skip
    curve = fit_figure(fitted, "decode t/s")["data"][1]

    assert law.form == CEILING and printed["name"] == "&lt;b&gt;fit&lt;/b&gt;"
    assert printed["x"][20] == 21.0 and printed["y"][20] == pytest.approx(9.81e-6 * 21**4.247)
    assert printed["y"][-1] is None  # at C the law's base is 0: outside its domain, a gap
    assert printed["hovertext"][0] == f"model_size_gb = 0.0<br>{9.81e-6 * 42**4.247:.2f} t/s"
    assert curve["x"][30] == 21.0 and curve["y"][30] == printed["y"][20]
    assert curve["name"] == "9.81e-06·(42 − x)^4.247, R² = 0.900" and "hovertext" not in curve


def test_a_missing_figure_is_a_gap_in_its_line_not_a_line_across_it() -> None:
    """Three depths, the middle one without prefill: the prefill line has a None there
    and does not join its neighbours; against power the point is left out."""
    series = SweepSeries(
        "gappy",
        [
            SweepPointData(4096, prefill_tokens_per_s=600.0, decode_tokens_per_s=46.0, power_w=800.0),
            SweepPointData(8192, decode_tokens_per_s=45.0, power_w=810.0),
            SweepPointData(16384, prefill_tokens_per_s=580.0, decode_tokens_per_s=44.0, power_w=820.0),
        ],
    )
    lines = {t["name"]: t for t in sweep_figure([series])["data"] if not t.get("meta")}
    prefill = lines["gappy: Prefill vs context"]
    assert prefill["x"] == [4096, 8192, 16384] and prefill["y"] == [600.0, None, 580.0]
    assert prefill["connectgaps"] is False
    assert lines["gappy: Decode vs context"]["y"] == [46.0, 45.0, 44.0]

"""The concurrency figure (pure) and the pages' concurrency parameters: the
figure overlays runs and marks the floor; bad ``concurrency`` / ``floor`` values
are errors naming the parameter, never a 500."""

from __future__ import annotations

import pytest

from leaderboard.boards.charts.concurrency import ConcurrencySeries, LevelData, concurrency_figure, first_below
from leaderboard.results.services.runs import run_create
from tests.fixtures.boards import ensure_rig, samples_from
from tests.fixtures.concurrency import level_payload


def _series(label, per_stream, energy=None):
    return ConcurrencySeries(
        label,
        [
            LevelData(n, output_tokens_per_s=tps * n, decode_tokens_per_s_mean=tps, ttft_ms_p90=100.0 * n,
                      energy_j_per_token=energy)
            for n, tps in per_stream.items()
        ],
    )  # fmt: skip


def test_the_figure_overlays_runs_and_leaves_out_a_pane_without_data():
    figure = concurrency_figure([_series("a <b>", {1: 50.0, 2: 40.0}), _series("b", {1: 30.0, 4: 29.0})])
    keys = [t for t in figure["data"] if t["meta"].get("legend")]
    lines = [t for t in figure["data"] if "pane" in t["meta"]]
    assert {t["meta"]["pane"] for t in lines} == {"aggregate", "per_stream", "ttft"}  # no J/token without NVML
    assert len(lines) == 6 and len(keys) == 2
    # Each trace has a name of its own: the legend names the run, a pane's line its run and figure.
    assert len({t["name"] for t in figure["data"]}) == len(figure["data"])
    assert figure["layout"]["xaxis"]["tickvals"] == [1, 2, 4]
    assert keys[0]["name"] == "a &lt;b&gt;"  # user text escaped for Plotly
    assert lines[0]["name"] == "a &lt;b&gt;: aggregate t/s" and not lines[0]["showlegend"]
    aggregate = next(t for t in lines if t["meta"]["pane"] == "aggregate")
    assert aggregate["x"] == [1, 2] and aggregate["y"] == [50.0, 80.0]
    assert figure["layout"]["shapes"] == []


def test_the_floor_is_drawn_and_each_runs_first_level_below_it_marked():
    slow, steady = _series("slow", {1: 50.0, 2: 40.0, 4: 20.0}, 0.5), _series("steady", {1: 45.0, 2: 44.0, 4: 43.0})
    figure = concurrency_figure([slow, steady], floor=30.0)
    marks = [t for t in figure["data"] if t["meta"].get("below_floor")]
    assert [(m["x"], m["y"]) for m in marks] == [([4], [20.0])]
    assert figure["layout"]["shapes"][0]["y0"] == 30.0
    assert first_below(steady.levels, 30.0) is None and first_below(steady.levels, 44.5).concurrency == 2


@pytest.fixture
def loaded_run(db):
    return run_create(
        rig=ensure_rig("olares-one", [("RTX 5090M Laptop", 1)]),
        stack={"engine": "llama.cpp", "build": "b7000"},
        model_file={"name": "gemma-3-270m", "quantization": "Q4_K_M"},
        configuration={"parallel": 4},
        workload={"name": "space-invaders-html", "version": "1", "max_tokens": 64},
        run={"status": "finished", "provenance": "measured"},
        samples=samples_from([100.0]),  # one repetition: its latency percentiles cannot be computed
        concurrency_levels=[level_payload(1, 100.0), level_payload(4, 60.0, n_requests=1)],
    ).run


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("concurrency=0", "concurrency: must be between 1 and 100000 streams, got 0"),
        ("concurrency=-3", "concurrency: must be between 1 and 100000 streams, got -3"),
        ("concurrency=two", "concurrency: a whole number of streams is required, not &#x27;two&#x27;"),
        ("floor=-5", "floor: must be a positive number of tokens per second, got -5"),
        ("floor=nan", "floor: must be a positive number of tokens per second, got nan"),
        ("floor=fast", "floor: a number of tokens per second is required, not &#x27;fast&#x27;"),
    ],
)
def test_bad_parameters_are_errors_naming_them(client, loaded_run, query, message):
    for url in (f"/runs/{loaded_run.pk}/", f"/concurrency/?runs={loaded_run.pk}"):
        response = client.get(f"{url}{'&' if '?' in url else '?'}{query}")
        assert response.status_code == 200
        assert message in response.content.decode()


def test_the_leaderboard_names_a_bad_level(client, loaded_run):
    page = client.get("/?concurrency=0").content.decode()
    assert "concurrency: must be between 1 and 100000 streams, got 0" in page


def test_the_run_page_gives_the_reason_for_a_percentile_it_cannot_compute(client, loaded_run):
    page = client.get(f"/runs/{loaded_run.pk}/").content.decode()
    # In words: why the figure is missing, no raw field name or internal reason.
    assert 'TTFT p99</dt><dd>– <span class="muted reason">only 1 value</span>' in page  # one repetition
    assert "TTFT ms p90: only 1 value." in page  # the one-request level
    assert "needs at least" not in page and "ttft_ms_p90" not in page
    assert 'id="levels"' in page and "concurrency-fig" in page


def test_the_leaderboard_ranks_at_a_level_with_its_filters(client, loaded_run):
    page = client.get("/?concurrency=4").content.decode()
    assert 'id="concurrency-leaderboard"' in page and f'href="/runs/{loaded_run.pk}/"' in page
    empty = client.get("/?concurrency=8").content.decode()
    assert "No finished run was measured at 8 streams." in empty
    filtered = client.get("/?concurrency=4&engine=vllm").content.decode()
    assert "No finished run was measured at 4 streams." in filtered


def test_the_concurrency_page_explains_aggregate_against_per_stream_at_one_stream(client, loaded_run):
    """At 1 stream the aggregate (tokens over wall time) is below the per-stream decode
    mean: the page says where the time went, from the level's own requests, and says
    its heading once."""
    page = client.get(f"/concurrency/?runs={loaded_run.pk}").content.decode()

    assert page.count("Under load: concurrent streams") == 1
    assert 'id="aggregate-note"' in page
    note = page.split(f'id="single-stream-{loaded_run.pk}"')[1].split("</p>")[0]
    level = loaded_run.concurrency_levels.get(concurrency=1)
    requests = list(level.requests.all())
    tokens = sum(r.tokens_generated for r in requests)
    span = max(r.ended_s for r in requests) - min(r.started_s for r in requests)
    waiting = sum(r.ttft_ms for r in requests) / 1000
    decoding = sum(r.tokens_generated / r.decode_tokens_per_s_server for r in requests)
    assert f"{tokens} output tokens in {span:.1f} s of wall time, {tokens / span:.1f} t/s aggregate" in note
    assert f"{waiting:.1f} s of that went to waiting for first tokens" in note
    assert f"in {decoding:.1f} s, is {tokens / decoding:.1f} t/s" in note
    assert f"The per-stream mean, {level.decode_tokens_per_s_mean:.1f} t/s" in note
    # The run page and the compare page keep their own heading for the section.
    assert "Under load: concurrent streams" in client.get(f"/runs/{loaded_run.pk}/").content.decode()


def test_the_level_board_names_a_run_left_out_for_its_failed_output_checks(client, db):
    """A run measured at the level whose answers failed: the board says it was left out
    and why, rather than "no finished run was measured" (the demo's run at 2 streams)."""
    samples = samples_from([100.0, 101.0])
    samples[0]["output_ok"] = False
    broken = run_create(
        rig=ensure_rig("olares-one", [("RTX 5090M Laptop", 1)]),
        stack={"engine": "llama.cpp", "build": "b7000"},
        model_file={"name": "gemma-3-270m", "quantization": "Q4_K_M"},
        configuration={"parallel": 4},
        workload={"name": "space-invaders-html", "version": "1", "max_tokens": 64},
        run={"status": "finished", "provenance": "measured"},
        samples=samples,
        concurrency_levels=[level_payload(1, 100.0), level_payload(2, 60.0)],
    ).run
    page = client.get("/?concurrency=2").content.decode()
    assert "No finished run was measured" not in page
    note = page.split('id="concurrency-left-out"', 1)[1].split("</p>", 1)[0]
    assert f'href="/runs/{broken.pk}/">run #{broken.pk}</a>' in note and "output checks failed" in page
    assert 'href="?concurrency=2&amp;failed=on"' in note
    shown = client.get("/?concurrency=2&failed=on").content.decode()
    assert 'id="concurrency-left-out"' not in shown and f'href="/runs/{broken.pk}/"' in shown

"""The compare page: side by side, ratio to a baseline, a significance test on raw
samples, warnings for differing comparison keys, reported rows on means only."""

from __future__ import annotations

import pytest
from django.test import Client
from scipy import stats

from leaderboard.boards.compare import significance
from tests.fixtures.boards import figure_in, sweep_points

pytestmark = pytest.mark.django_db

MTP = [253.73, 248.63, 251.65, 251.75, 250.43, 245.62, 248.14, 249.72, 249.78, 243.58]
NVFP4 = [181.9, 182.4, 182.1, 182.2, 181.7, 182.6]


def row_cells(html: str, run_id: int) -> str:
    table = html.split('id="compare"')[1].split("</table>")[0]
    for row in table.split("<tr")[1:]:
        if f'href="/runs/{run_id}/"' in row:
            return row
    raise AssertionError(f"run {run_id} not in the compare table")


def test_it_shows_ratio_and_welch_p_value_against_the_baseline(client: Client, board_run) -> None:
    mtp = board_run(tps=MTP)
    nvfp4 = board_run(tps=NVFP4, engine="vllm")  # same GPUs, model file and workload: same key

    html = client.get(f"/compare/?runs={nvfp4.pk},{mtp.pk}&baseline={nvfp4.pk}").text

    expected_p = stats.ttest_ind(MTP, NVFP4, equal_var=False).pvalue
    row = row_cells(html, mtp.pk)
    assert "1.37×" in row  # 249.30 / 182.15
    assert "+36.9%" in row
    assert "&lt; 0.001" in row and expected_p < 0.001
    assert "Welch" in row
    assert 'id="key-warning"' not in html


def test_it_runs_mann_whitney_when_asked(client: Client, board_run) -> None:
    a = board_run(tps=[100.0, 101.0, 99.0, 100.5])
    b = board_run(tps=[100.2, 100.9, 99.4, 100.1], engine="vllm")

    html = client.get(f"/compare/?runs={a.pk},{b.pk}&test=mannwhitney").text

    expected = stats.mannwhitneyu([100.2, 100.9, 99.4, 100.1], [100.0, 101.0, 99.0, 100.5], alternative="two-sided")
    assert f"{expected.pvalue:.3f}" in row_cells(html, b.pk)
    assert "Mann–Whitney" in row_cells(html, b.pk)


def test_it_warns_when_runs_do_not_share_a_comparison_key(client: Client, board_run) -> None:
    a = board_run(tps=MTP)
    b = board_run(rig="six-3090s", gpus=[("RTX 3090", 6)], model="Qwen3.5-122B-A10B", tps=[46.3, 45.9, 45.3])

    html = client.get(f"/compare/?runs={a.pk},{b.pk}").text

    warning = html.split('id="key-warning"')[1].split("</p>")[0]
    assert "different GPUs" in warning and "different model files" in warning
    assert "different workloads" not in warning


def test_it_compares_a_reported_run_on_its_published_mean(client: Client, board_run, reported_run) -> None:
    local = board_run(tps=[267.0, 266.0, 268.0])
    cloud = reported_run(decode=150.0)

    html = client.get(f"/compare/?runs={cloud.pk},{local.pk}").text

    assert 'id="means-note"' in html
    row = row_cells(html, local.pk)
    assert "1.78×" in row
    assert "published means only" in row
    dist = figure_in(html, "dist")
    assert [t["name"] for t in dist["data"]][0].endswith("(published mean)")
    assert dist["data"][1]["y"] == [267.0, 266.0, 268.0]


def test_it_overlays_the_sweeps_of_the_compared_runs(client: Client, board_run) -> None:
    a = board_run(sweep=sweep_points())
    b = board_run(sweep=sweep_points()[:3], engine="vllm")

    html = client.get(f"/compare/?runs={a.pk},{b.pk}").text

    sweep = figure_in(html, "sweep-fig")
    lines = [t for t in sweep["data"] if not t.get("meta", {}).get("legend")]
    assert len(lines) == 14  # 7 panes × 2 runs, besides one legend key per run
    assert {len(t["x"]) for t in lines} == {7, 3}


def test_it_asks_for_two_to_six_runs(client: Client, board_run) -> None:
    a = board_run()

    one = client.get(f"/compare/?runs={a.pk}")
    none = client.get("/compare/?runs=abc")

    assert "Choose two to six runs" in one.text
    assert "Choose two to six runs" in none.text


def test_it_keeps_at_most_six_runs(client: Client, board_run) -> None:
    runs = [board_run(tps=[100.0 + i, 101.0 + i]) for i in range(8)]

    html = client.get("/compare/?runs=" + ",".join(str(r.pk) for r in runs)).text

    table = html.split('id="compare"')[1].split("</table>")[0]
    assert table.count("<tr") == 7  # header + six


def test_significance_handles_too_few_and_constant_samples() -> None:
    assert significance("welch", [1.0], [1.0, 2.0]).p_value is None
    assert significance("welch", [5.0, 5.0, 5.0], [5.0, 5.0, 5.0]).p_value == 1.0
    assert significance("welch", [5.0, 5.0, 5.0], [7.0, 7.0, 7.0]).p_value == 0.0
    welch = significance("welch", [1.0, 2.0, 3.0], [2.0, 3.0, 4.0])
    assert welch.p_value == pytest.approx(stats.ttest_ind([1, 2, 3], [2, 3, 4], equal_var=False).pvalue)


def test_a_difference_rounding_to_zero_is_the_same_not_slower(client: Client, reported_run) -> None:
    # Seed 004's one figure stored twice: 249.303 (its run) and 249.3 (its sweep's 32K point).
    a = reported_run(label="Qwen3.6-35B-A3B", decode=249.303)
    b = reported_run(label="Qwen3.6-35B-A3B", decode=249.3)
    page = client.get(f"/compare/?runs={a.pk},{b.pk}").content.decode()
    assert "the same (within 0.05%)" in page
    assert "-0.0%" not in page and "slower" not in page


def test_runs_measured_at_different_depths_are_said_so_and_compared_where_their_sweeps_meet(client: Client) -> None:
    """Seed 001: the 122B's headline is its 4K point (46.3 t/s), the 397B was printed
    only at 8K (42.1 t/s). The page says the depths differ and compares them at 8K,
    where the article has both (45.9 against 42.1): −8.3%, not the −9.1% of 4K against 8K."""
    from leaderboard.results.models import Run
    from leaderboard.results.services.published import published_import

    published_import()
    big = Run.objects.get(report_key="six-3090-qwen35-122b-a10b-q6kxl-ctx-sweep")
    bigger = Run.objects.get(report_key="six-3090-qwen35-397b-ud-tq1-0")

    html = client.get(f"/compare/?runs={big.pk},{bigger.pk}").text

    warning = html.split('id="depth-warning"')[1].split("</p>")[0]
    assert f"#{big.pk} at 4K, #{bigger.pk} at 8K" in warning
    matched = html.split('id="matched"')[1].split("</table>")[0]
    rows = [r for r in matched.split("<tr>")[1:] if "<td>" in r]
    assert len(rows) == 1 and "<td>8K</td>" in rows[0]  # the one depth both sweeps have
    assert ">45.90<" in rows[0] and ">42.10<" in rows[0]
    assert f">{(42.1 - 45.9) / 45.9 * 100:+.1f}%<" in rows[0]
    assert "-9.1%" in row_cells(html, bigger.pk)  # the headline Δ stays, under the warning
    # The strip chart starts at zero: no axis from 42 to 46 that magnifies the gap.
    assert figure_in(html, "dist")["layout"]["yaxis"]["rangemode"] == "tozero"


def test_runs_at_one_depth_get_no_depth_warning(client: Client, board_run) -> None:
    a = board_run(tps=MTP)
    b = board_run(tps=NVFP4, engine="vllm")

    html = client.get(f"/compare/?runs={a.pk},{b.pk}").text

    assert 'id="depth-warning"' not in html and 'id="matched"' not in html

"""The best run of each configuration found by its anti-join
(checked against a plain reference), a run whose card is not stated kept off the GPU
pages, and "within run-to-run spread" as 2 SDs of the log run medians (runners.stats.run_noise)."""

from __future__ import annotations

import datetime as dt
import math
import re
import statistics

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from leaderboard.boards.filters import best_of_each_configuration, configuration_groups
from leaderboard.boards.selectors.noise import NOISE_MARGIN_SDS
from leaderboard.results.models import CONFIGURATION_GROUP, Run
from leaderboard.results.services.published import published_import
from tests.fixtures.boards import run_ids_in, samples_from

pytestmark = pytest.mark.django_db


def best_by_reference(runs: list[Run]) -> set[int]:
    """The plain definition: in each group, the run with the highest (mean decode t/s, id)."""
    best: dict[tuple[int, ...], Run] = {}
    for run in runs:
        key = tuple(getattr(run, field) for field in CONFIGURATION_GROUP)
        held = best.get(key)
        if held is None or (run.decode_tokens_per_s_mean, run.pk) > (held.decode_tokens_per_s_mean, held.pk):
            best[key] = run
    return {run.pk for run in best.values()}


def test_the_best_of_each_configuration_agrees_with_the_plain_definition(board_run) -> None:
    old = dt.datetime(2026, 1, 5, tzinfo=dt.UTC)
    runs = [
        board_run(tps=[100.0]),
        board_run(tps=[100.0]),  # a tie: the later run wins
        board_run(tps=[90.0], created_at=old),
        board_run(tps=[120.0], created_at=old, run={"provenance": "reported"}),
        board_run(tps=[50.0], ctx=4096),
        board_run(tps=[55.0], ctx=4096, rig="other-rig"),
        board_run(tps=[70.0], ctx=4096, rig="other-rig", workload="other-workload"),
        board_run(tps=[60.0], ctx=4096, engine="vllm"),
        board_run(tps=[65.0], ctx=4096, engine="vllm", model="Other-Model"),
    ]
    base = Run.objects.filter(status="finished", decode_tokens_per_s_mean__isnull=False)

    for narrowed in (
        base,
        base.filter(provenance="measured"),  # a filter that removes a group's fastest run
        base.filter(created_at__gte=old + dt.timedelta(days=1)),
        base.filter(configuration__ctx_size=4096),
    ):
        picked = set(best_of_each_configuration(narrowed).values_list("pk", flat=True))
        assert picked == best_by_reference(list(narrowed)), narrowed.query
        assert configuration_groups(narrowed).count() == len(picked)  # what the board's count counts
    measured = set(best_of_each_configuration(base.filter(provenance="measured")).values_list("pk", flat=True))
    assert runs[1].pk in measured and runs[0].pk not in measured  # a tie goes to the later run
    assert runs[3].pk in set(best_of_each_configuration(base).values_list("pk", flat=True))


def test_best_of_each_leaves_out_a_failed_check_and_keeps_the_next_fastest(client: Client, board_run) -> None:
    good = board_run(tps=[100.0, 101.0])
    failing = samples_from([300.0, 301.0])
    failing[0]["output_ok"] = False
    broken = board_run(samples=failing)
    assert broken.failed_checks == 1

    assert run_ids_in(client.get("/?best=on").text) == [good.pk]
    assert run_ids_in(client.get("/?best=on&failed=on").text) == [broken.pk]


def test_seed_000s_runs_are_on_neither_gpu_page_and_say_the_card_is_not_stated(client: Client) -> None:
    published_import()
    dual = Run.objects.filter(report_key__startswith="dual-3090-")
    assert dual.count() == 2
    rig_id = dual[0].rig_id

    on_3090 = client.get("/gpus/RTX 3090/").text
    on_3090_ti = client.get("/gpus/RTX 3090 Ti/").text
    rig = client.get(f"/rigs/{rig_id}/").text
    board = client.get("/").text

    for run in dual:
        assert run.pk not in run_ids_in(on_3090) and run.pk not in run_ids_in(on_3090_ti)
        assert f'href="/runs/{run.pk}/"' in rig and run.pk in run_ids_in(board)
        row = re.search(rf'name="runs" value="{run.pk}".*?</tr>', board, re.S).group(0)
        assert "card not stated" in row
        assert "card not stated" in client.get(f"/runs/{run.pk}/").text
    assert "card not stated" in rig
    # The six-3090 rig has one model of card: its runs stay on the 3090's page, unlabelled.
    six = Run.objects.filter(report_key__startswith="six-3090-").values_list("pk", flat=True)
    assert set(six) <= set(run_ids_in(on_3090))
    assert "card not stated" not in re.search(r"<tbody>(.*?)</tbody>", on_3090, re.S).group(1)
    for page in (on_3090, on_3090_ti):
        note = re.search(r'<p class="note" id="mixed-rigs">(.*?)</p>', page, re.S).group(1)
        assert f'href="/rigs/{rig_id}/"' in note and "card not stated" in note


def margin_pct(medians: list[float]) -> float:
    """The noise margin by hand: k × the sample SD of the log run medians, in percent."""
    return NOISE_MARGIN_SDS * statistics.stdev([math.log(m) for m in medians]) * 100


def test_within_run_to_run_spread_is_two_sds_of_the_log_run_medians(client: Client, board_run) -> None:
    medians = [100.0, 101.0, 102.0, 103.0, 104.0]  # range 3.9 %, 2 × SD of the logs 3.1 %
    runs = [board_run(tps=[m - 0.5, m, m + 0.5]) for m in medians]
    baseline = runs[2]  # mean 102
    inside = board_run(tps=[104.5, 105.0, 105.5], build="b1")  # +2.9 %
    beyond = board_run(tps=[105.1, 105.6, 106.1], build="b2")  # +3.5 %: within the range, not 2 × SD

    html = client.get(f"/compare/?runs={baseline.pk},{inside.pk},{beyond.pk}&baseline={baseline.pk}").text

    verdicts = re.findall(r'<td class="verdict">(.*?)</td>', html, re.S)
    assert f"±{margin_pct(medians):.1f}%" in verdicts[0] and "n = 5 runs" in verdicts[0]
    assert "within run-to-run spread" in verdicts[1]
    assert verdicts[2].strip() == "faster"
    assert "2 × the standard deviation of the run medians on a log scale (from 3 runs)" in html

    rig = client.get(f"/rigs/{baseline.rig_id}/").text
    table = re.search(r'<table class="board" id="noise">(.*?)</table>', rig, re.S).group(1)
    assert f"±{margin_pct(medians):.1f}%" in table and "Noise margin (2σ)" in table
    assert "2 × the standard deviation of the run medians on a log scale (from 3 runs)" in rig


def test_three_runs_give_a_margin_two_give_none_and_a_difference_between_two_is_judged(
    client: Client, board_run
) -> None:
    single = board_run(tps=[100.0], rig="lonely")
    pair = [board_run(tps=[m], rig="pair") for m in (100.0, 110.0)]
    three = [board_run(tps=[m], rig="three") for m in (100.0, 110.0, 105.0)]

    assert 'id="no-noise"' in client.get(f"/rigs/{single.rig_id}/").text
    table = client.get(f"/rigs/{pair[0].rig_id}/").text
    # The SD of two values is one difference: no usable margin (runners.stats.MIN_NOISE_RUNS).
    assert "unknown</span></td></tr>" in table and "±" not in re.search(r'id="noise">(.*?)</table>', table, re.S)[1]
    compared = client.get(f"/compare/?runs={pair[0].pk},{pair[1].pk}&baseline={pair[0].pk}").text
    assert "within run-to-run spread" not in compared
    assert f"±{margin_pct([100.0, 110.0, 105.0]):.1f}%" in client.get(f"/rigs/{three[0].rig_id}/").text  # 9.5 %


def test_best_of_each_counts_its_groups_not_the_runs_behind_them(client: Client, board_run) -> None:
    for tps in (100.0, 110.0, 90.0):
        board_run(ctx=4096, tps=[tps])
    board_run(ctx=8192, tps=[80.0])
    failing = samples_from([300.0, 301.0])
    failing[0]["output_ok"] = False
    board_run(ctx=16384, samples=failing)  # its group's only run: no best run unless failures count

    assert '<span class="count">4 runs</span>' in client.get("/").text
    best = client.get("/?best=on").text
    assert '<span class="count">2 runs</span>' in best and len(run_ids_in(best)) == 2
    with_failed = client.get("/?best=on&failed=on").text
    assert '<span class="count">3 runs</span>' in with_failed and len(run_ids_in(with_failed)) == 3


def test_best_of_each_counts_its_groups_without_a_probe_per_run(client: Client, board_run) -> None:
    # The anti-join's count probed the group index once per run counted: 140 ms at 10M runs.
    for ctx in (4096, 8192):
        board_run(ctx=ctx)
    with CaptureQueriesContext(connection) as queries:
        assert client.get("/?best=on").status_code == 200
    counts = [q["sql"] for q in queries.captured_queries if q["sql"].startswith("SELECT COUNT(*)")]
    assert counts, [q["sql"] for q in queries.captured_queries]
    assert not [sql for sql in counts if "EXISTS" in sql], counts
    assert [sql for sql in counts if "DISTINCT" in sql], counts


def test_best_of_each_counts_its_rows_up_to_its_own_cap(client: Client, board_run, monkeypatch) -> None:
    from leaderboard.boards.selectors import leaderboard

    monkeypatch.setattr(leaderboard, "BEST_COUNT_CAP", 2)
    for ctx in (4096, 8192, 16384):
        board_run(ctx=ctx)

    assert '<span class="count">3 runs</span>' in client.get("/").text
    best = client.get("/?best=on&per_page=1").text
    assert "More than 2 runs" in best and len(run_ids_in(best)) == 1

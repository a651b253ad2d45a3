"""The regression report's figures against its headers, recomputed here from
the stored samples with an independent oracle (statistics and scipy's t and
Welch intervals), and its Reproduce block: nothing of the recording machine
(no path, no port it used), the model by file name + sha256 + source, the
server flags, the client's request and a llama-bench line.

Verdicts are made by the real chain (build_report_record, the real ingest, A/B
pairs on the real Redis broker), with decode samples chosen here."""

from __future__ import annotations

import math
import re
import statistics
from collections.abc import Callable
from typing import Any

import pytest
import redis
from scipy import stats as scipy_stats

from leaderboard.regressions.models import ConfirmationPair, Verdict
from leaderboard.regressions.report_md import COLUMNS
from leaderboard.regressions.services.builds import build_report_record
from leaderboard.results.models import ModelFile, Run
from tests.fixtures.regressions import post_run

pytestmark = pytest.mark.django_db(transaction=True)

BASE = [100.0, 101.0, 99.0, 100.5, 99.5, 100.2, 99.8, 100.1, 99.9, 100.3]
SLOW = [v * 0.90 for v in BASE]
MACHINE_PATH = "/root/.cache/rigboard-tests/models/gemma-3-270m-it-Q4_K_M.gguf"
RECORDED_PORT = 41873


@pytest.fixture(autouse=True)
def _locmem_email(settings: Any) -> None:
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"


def _report(build: Any, runs: list[Any]) -> dict[str, Any]:
    return {
        "build_id": build.pk,
        "status": "built",
        "build": {"build_time_s": 1.0, "compiler": "cc", "log_tail": "", "binary_path": "/b", "cached": True},
        "runs": [{"build_run_id": br.pk, "status": "finished", "error": ""} for br in runs],
    }


def _machine_like_setup(nightly_setup: Callable[..., Any], tmp_path: Any, **sub_fields: Any) -> tuple[Any, Any, Any]:
    """A subscription as the demo's is: a local repository in a temporary folder, a reference whose
    model sits under this machine's home, runs whose command lines name that path and a random port."""
    sub, ref, make_build = nightly_setup(repo_url=str(tmp_path / "rigboard-nightly-demo-x" / "llama.cpp"), **sub_fields)
    ref.spec = {
        "server": {"model": MACHINE_PATH, "ctx_size": 2048, "threads": 1},
        "workload": {"max_tokens": 8, "repetitions": 6, "seed": 42},
    }
    ref.save()
    configuration = {
        "ctx_size": 2048,
        "threads": 1,
        "command_line": f"{tmp_path}/build/bin/llama-server -m {MACHINE_PATH} --port {RECORDED_PORT}",
    }

    def _build(char: str, samples: list[float]) -> Any:
        return make_build(char, samples, configuration=configuration)

    return sub, ref, _build


def _table(markdown: str) -> tuple[list[str], list[list[str]]]:
    lines = [line for line in markdown.splitlines() if line.startswith("| ")]
    split = [[cell.strip() for cell in re.split(r"(?<!\\)\|", line)[1:-1]] for line in lines]
    return split[0], split[1:]


def _side(values: list[float]) -> str:
    """The oracle: mean [95% CI of the mean by Student's t] (n)."""
    mean = statistics.fmean(values)
    low, high = scipy_stats.t.interval(0.95, len(values) - 1, loc=mean, scale=scipy_stats.sem(values))
    return f"{mean:.2f} [{low:.2f}, {high:.2f}] (n={len(values)})"


def test_a_rerun_rule_report_shows_each_runs_mean_with_its_ci_and_welchs_effect(
    nightly_setup: Callable[..., Any], celery_broker: redis.Redis, tmp_path: Any, client: Any
) -> None:
    _, _, make_build = _machine_like_setup(nightly_setup, tmp_path)
    good = make_build("a", BASE)
    build_report_record(report=_report(good, list(good.build_runs.all())))
    slow = make_build("b", SLOW)
    _, (verdict,) = build_report_record(report=_report(slow, list(slow.build_runs.all())))
    assert verdict.kind == "regression"

    markdown = client.get(f"/regressions/report/{verdict.pk}/?format=md").content.decode()
    header, (row,) = _table(markdown)

    assert header == list(COLUMNS)
    cells = dict(zip(header, row, strict=True))
    assert cells["baseline t/s: mean [95% CI] (n)"] == _side(BASE)
    assert cells["candidate t/s: mean [95% CI] (n)"] == _side(SLOW)
    # The effect: the change of the mean log, its CI by Welch's t on the logs (scipy's).
    logs_new, logs_base = [math.log(v) for v in SLOW], [math.log(v) for v in BASE]
    welch = scipy_stats.ttest_ind(logs_new, logs_base, equal_var=False).confidence_interval(0.95)
    diff = statistics.fmean(logs_new) - statistics.fmean(logs_base)
    low, high = (100 * math.expm1(welch.low), 100 * math.expm1(welch.high))
    assert cells["effect: % [95% CI]"] == f"{100 * math.expm1(diff):+.2f}% [{low:+.2f}%, {high:+.2f}%]"
    assert cells["test"].startswith("re-run rule: Mann–Whitney U")
    assert cells["p"] == f"{verdict.p_value:.2g}"
    assert cells["noise"].startswith("not known yet")


def test_an_ab_report_shows_the_pairs_medians_and_the_paired_effect(
    nightly_setup: Callable[..., Any], celery_broker: redis.Redis, tmp_path: Any, client: Any
) -> None:
    _, _, make_build = _machine_like_setup(nightly_setup, tmp_path, confirm_mode="ab")
    good = make_build("a", BASE)
    build_report_record(report=_report(good, list(good.build_runs.all())))
    slow = make_build("b", SLOW)
    build_report_record(report=_report(slow, list(slow.build_runs.all())))
    pairs = list(ConfirmationPair.objects.filter(build=slow).order_by("index"))
    runs = []
    for pair, ratio in zip(pairs, [0.90, 0.905, 0.895, 0.9], strict=True):
        a = [100.0 + 0.1 * i + pair.index for i in range(6)]
        post_run(slow, a, build_run=pair.a_run)
        post_run(slow, [v * ratio for v in a], build_run=pair.b_run)
        runs += [pair.a_run, pair.b_run]
    build_report_record(report=_report(slow, runs))
    verdict = Verdict.objects.get(build=slow)
    assert verdict.confirmation == "ab_confirmed"

    markdown = client.get(f"/regressions/report/{verdict.pk}/?format=md").content.decode()
    _, (row,) = _table(markdown)
    cells = dict(zip(COLUMNS, row, strict=True))

    a_medians = [statistics.median(Run.objects.get(uuid=p.a_run.run_uuid).build_decode_samples()) for p in pairs]
    b_medians = [statistics.median(Run.objects.get(uuid=p.b_run.run_uuid).build_decode_samples()) for p in pairs]
    assert cells["baseline t/s: mean [95% CI] (n)"] == _side(a_medians)
    assert cells["candidate t/s: mean [95% CI] (n)"] == _side(b_medians)
    log_ratios = [math.log(b / a) for a, b in zip(a_medians, b_medians, strict=True)]
    paired = scipy_stats.ttest_1samp(log_ratios, 0.0)
    interval = paired.confidence_interval(0.95)
    effect = f"{100 * math.expm1(statistics.fmean(log_ratios)):+.2f}%"
    assert cells["effect: % [95% CI]"] == (
        f"{effect} [{100 * math.expm1(interval.low):+.2f}%, {100 * math.expm1(interval.high):+.2f}%]"
    )
    assert cells["p"] == f"{paired.pvalue:.2g}"
    assert cells["test"].startswith("A/B pairs: paired t-test")


def test_the_reproduce_block_names_nothing_of_the_recording_machine(
    nightly_setup: Callable[..., Any], celery_broker: redis.Redis, tmp_path: Any, client: Any
) -> None:
    _, _, make_build = _machine_like_setup(nightly_setup, tmp_path)
    good = make_build("a", BASE)
    build_report_record(report=_report(good, list(good.build_runs.all())))
    slow = make_build("b", SLOW)
    _, (verdict,) = build_report_record(report=_report(slow, list(slow.build_runs.all())))
    ModelFile.objects.filter(pk=verdict.new_run.model_file_id).update(
        sha256="ab" * 32, repo="unsloth/gemma-3-270m-it-GGUF"
    )

    markdown = client.get(f"/regressions/report/{verdict.pk}/?format=md").content.decode()
    page = client.get(f"/regressions/report/{verdict.pk}/").content.decode()

    for text in (markdown, page):
        for machine in (str(tmp_path), "/root/", "/tmp/", ".cache/", str(RECORDED_PORT), "rigboard-nightly-demo-x/"):
            assert machine not in text, machine
    assert "Model: `gemma-3-270m-it-Q4_K_M.gguf` (sha256 `" + "ab" * 32 + "`)" in markdown
    assert "from https://huggingface.co/unsloth/gemma-3-270m-it-GGUF" in markdown
    assert "llama-server -m gemma-3-270m-it-Q4_K_M.gguf --ctx-size 2048 --threads 1\n" in markdown
    # The client's request: the prompt's length in tokens and the tokens the run's workload generated.
    run = verdict.new_run
    prompt_tokens, max_tokens = run.samples.first().prompt_tokens, run.workload.max_tokens
    request = re.search(r'curl -s "http://localhost:\$\{PORT:-8080\}/completion" -d \'(.*)\'', markdown)
    assert request is not None and f'"n_predict": {max_tokens}' in request.group(1)
    assert '"seed": 42' in request.group(1)
    assert (f"a prompt of {prompt_tokens} tokens" if prompt_tokens else "the workload prompt") in request.group(1)
    assert "llama-bench -m gemma-3-270m-it-Q4_K_M.gguf -t 1 -p" in markdown
    assert f"-n {max_tokens} -r {run.workload.repetitions or 6} -o md" in markdown
    assert "shows only through llama-server" in markdown
    assert f"git checkout {'b' * 40}" in markdown and "a local repository (llama.cpp)" in markdown


def test_a_recording_under_load_is_labelled_so(
    nightly_setup: Callable[..., Any], celery_broker: redis.Redis, tmp_path: Any, client: Any
) -> None:
    """Three builds with no change between them whose runs are a factor of 3
    apart, as on a machine busy with other work (a threshold of 60% lets
    them pass as no change): the next verdict's noise says it was under load."""
    _, _, make_build = _machine_like_setup(nightly_setup, tmp_path, noise_k=0.5, threshold_pct=60)
    for char, factor in (("a", 1.0), ("c", 0.5), ("d", 1.5)):
        build = make_build(char, [v * factor for v in BASE])
        build_report_record(report=_report(build, list(build.build_runs.all())))
    slow = make_build("b", [v * 0.3 for v in BASE])
    _, (verdict,) = build_report_record(report=_report(slow, list(slow.build_runs.all())))
    assert verdict.kind == "regression" and verdict.noise_spread_pct is not None and verdict.noise_spread_pct > 10

    markdown = client.get(f"/regressions/report/{verdict.pk}/?format=md").content.decode()
    _, (row,) = _table(markdown)
    cells = dict(zip(COLUMNS, row, strict=True))

    assert cells["baseline t/s: mean [95% CI] (n)"].startswith("under load: ")
    assert cells["noise"].startswith("under load: runs of one build differ by about")
    assert "Recorded under load on nightly-rig: those figures are not the rig's speed." in markdown


def test_a_change_between_releases_says_which_two_and_links_the_release(
    nightly_setup: Callable[..., Any], celery_broker: redis.Redis, client: Any
) -> None:
    sub, _, make_build = nightly_setup(follows="releases", release_source="sdist")
    good = make_build("x", BASE, commit="b103")
    build_report_record(report=_report(good, list(good.build_runs.all())))
    slow = make_build("y", SLOW, commit="b106")
    _, (verdict,) = build_report_record(report=_report(slow, list(slow.build_runs.all())))
    Verdict.objects.filter(pk=verdict.pk).update(
        bisect_status="done", first_bad_commit="b106", release_window_from="b103", release_window_to="b106"
    )

    markdown = client.get(f"/regressions/report/{verdict.pk}/?format=md").content.decode()

    assert "**Where**: First slow release: b106, between releases b103 and b106 (consecutive)" in markdown
    assert "(https://github.com/ggml-org/llama.cpp/releases/tag/b106)" in markdown
    assert "git clone --depth 1 --branch b106 https://github.com/ggml-org/llama.cpp llama.cpp" in markdown

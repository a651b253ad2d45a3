"""benchmarks/replay_summary.py: a replay's JSON (rigboard-replay/1) as the
README's table, from the replay's own figures (medians of the judged runs'
repetitions, verdicts with their A/B answers)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.replay_summary import main
from tests.fixtures.releases import write_sdist

REFS = ["Gemma 1 thread", "Gemma 2 threads"]
# A step its first run called no change and its blocks agreed with.
SAME = {
    "kind": "none", "effect_pct": 0.4, "p_value": 0.31, "confirmation": "ab_confirmed",
    "ab": {"n_pairs": 4, "effect_pct": 0.1, "ci_pct": [-1.0, 1.2]},
}  # fmt: skip


def _release(number: int, tps: list[float], verdict: dict | None = None) -> dict:
    return {
        "release": number,
        "url": f"https://github.com/ggml-org/llama.cpp/releases/tag/b{number}",
        "load_1m": [0.4, None],
        "build": {"build_time_s": 86.7, "cached": number == 2, "bench_time_s": 45.1},
        "verdicts": [{"reference": REFS[0], **verdict}] if verdict else [],
        "runs": [
            {"reference": REFS[0], "role": "noise", "decode_tokens_per_s": [1.0]},
            {"reference": REFS[0], "role": "judged", "decode_tokens_per_s": tps},
        ],
    }


def test_each_release_is_a_row_with_its_median_and_its_verdict(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    regression = {
        "kind": "regression", "effect_pct": -5.04, "p_value": 0.0013, "confirmation": "ab_confirmed",
        "ab": {"n_pairs": 4, "effect_pct": -4.9, "ci_pct": [-6.1, -3.7]},
    }  # fmt: skip
    path = tmp_path / "replay.json"
    path.write_text(json.dumps({
        "label": "recorded here", "references": [{"name": r} for r in REFS],
        "releases": [_release(1, [70.0, 80.0, 75.0]), _release(2, [71.0, 72.0, 73.0], regression)],
    }))  # fmt: skip

    assert main([str(path)]) == 0

    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "recorded here"
    assert (
        lines[3]
        == "| [b1](https://github.com/ggml-org/llama.cpp/releases/tag/b1) | 87 | 45 | 0.4 | 75.00 | – | – | – |"
    )
    assert lines[4].startswith(
        "| [b2](https://github.com/ggml-org/llama.cpp/releases/tag/b2) | 87 (cache) | 45 | 0.4 | 72.00 |"
    )
    assert "regression -5.0% (p 0.0013); A/B 4 pairs -4.9% [-6.1, -3.7]: reproduced by A/B" in lines[4]


def test_a_window_in_segments_is_one_table_with_each_step_once(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    first, second, gap = tmp_path / "one.json", tmp_path / "two.json", tmp_path / "gap.json"
    refs = [{"name": r} for r in REFS]
    first.write_text(
        json.dumps({"label": "VM one", "references": refs, "releases": [_release(1, [70.0]), _release(2, [71.0])]})
    )
    second.write_text(
        json.dumps(
            {"label": "VM two", "references": refs, "releases": [_release(2, [90.0]), _release(3, [91.0], SAME)]}
        )
    )
    gap.write_text(json.dumps({"label": "VM three", "references": refs, "releases": [_release(4, [90.0])]}))

    assert main([str(first), str(second)]) == 0

    lines = capsys.readouterr().out.splitlines()
    assert lines[:2] == ["segment 1: VM one", "segment 2: VM two"]
    assert lines[2].startswith("| segment | release |")
    rows = lines[4:]
    # b2 is the second segment's baseline (its row there has no verdict): shown once, from the first segment.
    tag = "https://github.com/ggml-org/llama.cpp/releases/tag/"
    assert [row.split(" | ")[:2] for row in rows] == [
        ["| 1", f"[b1]({tag}b1)"], ["| 1", f"[b2]({tag}b2)"], ["| 2", f"[b3]({tag}b3)"]
    ]  # fmt: skip
    assert " 71.00 " in rows[1] and " 91.00 " in rows[2]
    assert "none +0.4% (p 0.31); A/B 4 pairs +0.1% [-1.0, +1.2]: no change by A/B" in rows[2]  # the site's words
    with pytest.raises(SystemExit, match="segment 2 starts at b4, not at b2"):
        main([str(first), str(gap)])


def test_with_diffs_each_step_says_what_it_changed_on_the_cpu_decode_path(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """Across segments too: the first step of a later segment is diffed against the
    segment before's last release."""
    sdists, refs = tmp_path / "sdists", [{"name": r} for r in REFS]
    tree = {"ggml/src/ggml-cpu/ops.cpp": "ops 1", "ggml/src/ggml-metal/ggml-metal.m": "metal 1"}
    write_sdist(sdists, 1, tree)
    write_sdist(sdists, 2, {**tree, "ggml/src/ggml-metal/ggml-metal.m": "metal 2"})
    write_sdist(sdists, 3, {**tree, "ggml/src/ggml-cpu/ops.cpp": "ops 3"})
    first, second = tmp_path / "one.json", tmp_path / "two.json"
    first.write_text(json.dumps({"references": refs, "releases": [_release(1, [70.0]), _release(2, [71.0])]}))
    second.write_text(json.dumps({"references": refs, "releases": [_release(2, [70.0]), _release(3, [71.0])]}))

    assert main([str(first), str(second), "--diffs", "--sdists", str(sdists)]) == 0

    lines = capsys.readouterr().out.splitlines()
    assert lines[2].endswith(" | CPU decode path changed |")
    assert [row.rsplit(" | ", 1)[1] for row in lines[4:]] == [
        "– |",
        "none of 1 file |",
        "1 of 2 files: ggml CPU backend |",
    ]


def test_a_regression_judged_against_a_held_baseline_says_so_across_segments(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    def regression(baseline: str, release: int, confirmation: str = "ab_confirmed") -> dict:
        return {
            "kind": "regression", "effect_pct": -20.0, "p_value": 0.0002, "confirmation": confirmation,
            "window": [baseline, f"b{release}"], "ab": {"n_pairs": 4, "effect_pct": -21.0, "ci_pct": [-22.0, -20.0]},
        }  # fmt: skip

    first, second = tmp_path / "one.json", tmp_path / "two.json"
    head = {"label": "recorded here", "references": [{"name": r} for r in REFS]}
    first.write_text(json.dumps({**head, "releases": [
        _release(1, [70.0]), _release(2, [60.0], regression("b1", 2)), _release(3, [60.0], regression("b1", 3)),
    ]}))  # fmt: skip
    # In the next segment: b4's regression against the same held b1 (b3 is its first release, not a row),
    # b5 refuted (it does not stand), b6 against a new baseline b5: a new regression.
    second.write_text(json.dumps({**head, "releases": [
        _release(3, [60.0], regression("b1", 3)), _release(4, [60.0], regression("b1", 4)),
        _release(5, [70.0], regression("b1", 5, "ab_refuted")), _release(6, [60.0], regression("b5", 6)),
    ]}))  # fmt: skip

    assert main([str(first), str(second)]) == 0

    rows = {line.split("[b")[1].split("]")[0]: line for line in capsys.readouterr().out.splitlines() if "[b" in line}
    held = "against b1 (held since b2 regressed)"
    assert held not in rows["2"] and held in rows["3"] and held in rows["4"]
    assert "held since" not in rows["5"] and "held since" not in rows["6"]


def test_a_segment_stopped_early_shows_its_settled_releases_and_goes_on_from_the_last(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """A replay stopped by a session's end keeps its later releases pending: they are no
    rows, the segment's line names them, and the next segment starts from its last settled."""
    refs = [{"name": r} for r in REFS]
    pending = [{**_release(n, []), "state": "pending", "build": {}, "verdicts": [], "runs": []} for n in (3, 4)]
    stopped, rest, gap = tmp_path / "stopped.json", tmp_path / "rest.json", tmp_path / "gap.json"
    stopped.write_text(json.dumps({
        "label": "VM one", "references": refs,
        "releases": [
            {**_release(1, [70.0]), "state": "done"}, {**_release(2, [71.0], SAME), "state": "done"}, *pending,
        ],
    }))  # fmt: skip
    rest.write_text(json.dumps({
        "label": "VM two", "references": refs, "releases": [_release(2, [90.0]), _release(3, [91.0], SAME)],
    }))  # fmt: skip
    gap.write_text(json.dumps({"label": "VM three", "references": refs, "releases": [_release(4, [90.0])]}))

    assert main([str(stopped), str(rest)]) == 0

    lines = capsys.readouterr().out.splitlines()
    assert lines[:2] == ["segment 1: VM one (stopped after b2; not replayed: b3, b4)", "segment 2: VM two"]
    tag = "https://github.com/ggml-org/llama.cpp/releases/tag/"
    assert [row.split(" | ")[:2] for row in lines[4:]] == [
        ["| 1", f"[b1]({tag}b1)"], ["| 1", f"[b2]({tag}b2)"], ["| 2", f"[b3]({tag}b3)"]
    ]  # fmt: skip
    with pytest.raises(SystemExit, match="segment 2 starts at b4, not at b2"):
        main([str(stopped), str(gap)])

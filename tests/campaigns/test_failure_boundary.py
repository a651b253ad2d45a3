"""The failure boundary of a campaign's page: numeric thresholds and the
non-numeric values (or pairs of values) that every trial having them failed with."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from leaderboard.campaigns.analysis import campaign_analysis

SPACE = {"cache_type_v": ["f16", "q8_0"], "flash_attn": ["on", "off"], "threads": [1, 2]}


@dataclass
class Trial:
    number: int
    params: dict[str, Any]
    state: str
    value: float | None = None
    metrics: dict[str, Any] = field(default_factory=dict)
    samples: list[Any] = field(default_factory=list)
    failure_kind: str = ""
    failure_reason: str = ""
    log_tail: str = ""
    duration_s: float | None = 1.0
    role: str = "search"


def trial(number: int, cache: str, fa: str, threads: int) -> Trial:
    params = {"cache_type_v": cache, "flash_attn": fa, "threads": threads}
    # llama.cpp: "quantized V cache requires flash_attn to be enabled".
    if cache == "q8_0" and fa == "off":
        return Trial(number, params, "failed", failure_kind="server_start")
    return Trial(number, params, "complete", value=100.0 + number)


def boundary(trials: list[Trial]) -> list[str]:
    spec = {"objective": "decode_tokens_per_s", "space": SPACE, "budget": {"trials": len(trials)}}
    return campaign_analysis(spec, trials).boundary


def test_a_pair_that_always_fails_is_named_when_neither_value_fails_alone() -> None:
    combos = [("f16", "on"), ("f16", "off"), ("q8_0", "on"), ("q8_0", "off")]
    trials = [trial(n, c, fa, 1 + n % 2) for n, (c, fa) in enumerate(combos * 2)]
    assert boundary(trials) == [
        "cache_type_v = q8_0 with flash_attn = off: failed in all 2 trials that had it (server start); "
        "each ran without the other"
    ]


def test_a_lone_failure_is_named_only_when_its_values_leave_one_explanation() -> None:
    trials = [trial(0, "f16", "on", 1), trial(1, "q8_0", "off", 1), trial(2, "f16", "off", 2)]
    # q8_0 was only ever tried with flash attention off: the data cannot tell the pair from the
    # value, and the value is the smaller explanation.
    assert boundary(trials) == ["cache_type_v = q8_0: failed in the one trial that had it (server start)"]
    # One failed trial whose two values were each tried nowhere else: which one failed it is a guess.
    lone = [trial(0, "f16", "on", 1), Trial(1, {"cache_type_v": "q8_0", "flash_attn": "off"}, "failed")]
    assert boundary(lone) == []


def test_nothing_is_named_when_no_trial_ran() -> None:
    trials = [trial(n, "q8_0", "off", 1 + n % 2) for n in range(3)]
    assert boundary(trials) == []

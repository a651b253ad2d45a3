"""The shared rules of a campaign's end: the best feasible trial (what is confirmed),
the pruning rule the rig applies from a job's [trial] (Optuna's MedianPruner over
the completed trials' repetitions), and what the confirmation run says (mean, 95%
CI with Student's t, or why it does not confirm). Pure: no rig, no database."""

from __future__ import annotations

import math
import statistics

import pytest

from leaderboard.campaigns.analysis import campaign_analysis
from runners.campaign.confirm import confirmation_summary, confirmation_text
from runners.campaign.search import MedianPrune, TrialResult, best_feasible, prune_history
from runners.campaign.spec import CampaignSpec
from runners.config import ConfigError
from runners.stats import t_quantile_975

SPEC = {"name": "t", "space": {"threads": [1, 2, 4, 8]}, "budget": {"trials": 4}}


def trials_with_a_confirmation(confirmation: TrialResult) -> list[TrialResult]:
    return [
        TrialResult(1, {"threads": 1}, value=10.0, samples=[10.0, 10.0]),
        TrialResult(2, {"threads": 2}, value=30.0, samples=[29.0, 31.0]),
        TrialResult(3, {"threads": 8}, value=99.0, samples=[99.0], pruned=True),
        TrialResult(4, {"threads": 4}, "infeasible", value=50.0, samples=[50.0, 50.0]),
        confirmation,
    ]


@pytest.mark.parametrize(("value", "field"), [(1, "confirm_repetitions"), (-2, "confirm_repetitions"),
                                               ("ten", "confirm_repetitions")])  # fmt: skip
def test_confirm_repetitions_is_at_least_two_or_zero(value, field):
    with pytest.raises(ConfigError) as caught:
        CampaignSpec.from_mapping({**SPEC, "confirm_repetitions": value})
    assert caught.value.field == field
    assert CampaignSpec.from_mapping(SPEC).confirm_repetitions == 10
    assert CampaignSpec.from_mapping({**SPEC, "confirm_repetitions": 0}).confirm_repetitions == 0


def test_the_best_feasible_trial_is_complete_not_pruned_and_no_confirmation():
    confirmation = TrialResult(5, {"threads": 2}, value=500.0, samples=[500.0] * 3, role="confirmation")
    trials = trials_with_a_confirmation(confirmation)
    best = best_feasible("maximize", trials)
    assert best is not None and best.number == 2
    assert best_feasible("minimize", trials).number == 1
    assert best_feasible("maximize", [trials[3]]) is None
    # Only the complete, not pruned search trials set the median a new trial is pruned against.
    assert prune_history(trials) == [[10.0, 10.0], [29.0, 31.0]]


def test_the_rig_prunes_as_optunas_median_pruner_after_three_completed_trials():
    history = [[20.0, 21.0, 20.0], [30.0, 29.0, 30.0], [25.0, 26.0, 25.0]]
    assert MedianPrune("maximize", history)(1, 10.0) is True  # clearly below the median (25) at step 1
    assert MedianPrune("maximize", history)(1, 27.0) is False
    assert MedianPrune("maximize", history[:2])(1, 1.0) is False  # two completed trials: too early to judge
    assert MedianPrune("minimize", history)(1, 10.0) is False  # lower is better here
    rule = MedianPrune("maximize", history)
    assert rule(1, 27.0) is False and rule(2, 24.0) is False  # its best so far (27) stays above the median


def test_a_confirmation_gives_the_mean_with_its_t_interval_and_the_analysis_ignores_it():
    samples = [30.0, 31.0, 29.5, 30.5, 30.2, 29.8, 30.1, 30.4, 29.9, 30.6]
    confirmation = TrialResult(5, {"threads": 2}, value=statistics.fmean(samples), samples=samples,
                               role="confirmation")  # fmt: skip
    trials = trials_with_a_confirmation(confirmation)
    summary = confirmation_summary(SPEC, trials)
    half = t_quantile_975(9) * statistics.stdev(samples) / math.sqrt(10)
    assert summary["confirmed"] and summary["n"] == 10 and summary["of_trial"] == 2
    assert summary["mean"] == pytest.approx(statistics.fmean(samples))
    assert summary["ci95_low"] == pytest.approx(summary["mean"] - half)
    assert summary["ci95_high"] == pytest.approx(summary["mean"] + half)
    assert summary["text"].startswith("confirmed by 10 repetitions: mean 30.20 (95% CI")
    assert "confirmation (trial 5): confirmed by 10" in confirmation_text(SPEC, trials)

    analysis = campaign_analysis(CampaignSpec.from_mapping(SPEC).as_dict(), trials)
    assert analysis.done == 4 and [p["number"] for p in analysis.best_so_far] == [1, 2, 3, 4]
    assert analysis.best["number"] == 2  # what is confirmed: not the pruned trial 3, not the infeasible 4
    assert analysis.confirmation == summary


@pytest.mark.parametrize(
    ("state", "kind", "reason", "expected"),
    [
        ("infeasible", "", "breaks vram_peak_mib ≤ 100", "not confirmed: the confirmation run breaks vram_peak_mib"),
        ("failed", "out_of_memory", "out of memory while loading", "not confirmed: the confirmation run failed"),
        ("aborted", "aborted", "campaign cancelled", "not confirmed: the confirmation run aborted"),
    ],
)
def test_a_confirmation_that_fails_or_breaks_a_constraint_confirms_nothing(state, kind, reason, expected):
    confirmation = TrialResult(5, {"threads": 2}, state, value=None, samples=[30.0, 31.0], failure_kind=kind,
                               failure_reason=reason, role="confirmation")  # fmt: skip
    summary = confirmation_summary(SPEC, trials_with_a_confirmation(confirmation))
    assert not summary["confirmed"] and summary["text"].startswith(expected), summary["text"]


def test_a_space_parameter_the_server_does_not_accept_is_named():
    parsed = CampaignSpec.from_mapping({**SPEC, "space": {"threads": [1, 2], "spec_type": ["none", "ngram-simple"]}})
    parsed.check_flags(["--threads", "--spec-type", "-ot"])
    with pytest.raises(ConfigError) as caught:
        parsed.check_flags(["--threads", "-t"], where="an old llama-server")
    assert caught.value.field == "space.spec_type" and "does not accept --spec-type" in caught.value.reason


def test_every_objective_of_a_confirmation_gets_its_n_mean_and_interval():
    """A campaign minimising TTFT confirms with the TTFT of each repetition, and the
    other objectives and peak VRAM (a Pareto axis) get theirs too."""
    ttft = [31.0, 29.0, 30.0, 32.0, 28.0]
    decode = [80.0, 82.0, 81.0, 79.0, 83.0]
    confirmation = TrialResult(3, {"threads": 2}, value=statistics.fmean(ttft), samples=ttft, role="confirmation",
                               repetitions={"ttft_ms": ttft, "decode_tokens_per_s": decode,
                                            "vram_peak_mib": [700.0] * 5, "tokens_per_kwh": []})  # fmt: skip
    trials = [TrialResult(1, {"threads": 1}, value=40.0, samples=[40.0]),
              TrialResult(2, {"threads": 2}, value=30.0, samples=[30.0]), confirmation]  # fmt: skip
    spec = {**SPEC, "objective": "ttft_ms"}
    summary = confirmation_summary(spec, trials)
    half = t_quantile_975(4) * statistics.stdev(ttft) / math.sqrt(5)
    assert summary["confirmed"] and summary["of_trial"] == 2  # the lowest TTFT: minimised
    assert summary["n"] == 5 and summary["mean"] == pytest.approx(30.0)
    assert summary["ci95_low"] == pytest.approx(30.0 - half) and summary["ci95_high"] == pytest.approx(30.0 + half)
    assert summary["text"] == f"confirmed by 5 repetitions: mean 30.00 (95% CI {30 - half:.2f} to {30 + half:.2f})"
    assert set(summary["figures"]) == {"ttft_ms", "decode_tokens_per_s", "vram_peak_mib"}  # none: not shown
    assert summary["figures"]["decode_tokens_per_s"]["mean"] == pytest.approx(81.0)
    assert summary["figures"]["vram_peak_mib"] == {"n": 5, "mean": 700.0, "stdev": 0.0, "ci95_low": 700.0,
                                                   "ci95_high": 700.0}  # fmt: skip
    # Without the per-repetition values a TTFT confirmation can say its mean only: the bug this guards.
    bare = TrialResult(3, {"threads": 2}, value=30.0, samples=[], role="confirmation")
    assert confirmation_summary(spec, [*trials[:2], bare])["n"] is None

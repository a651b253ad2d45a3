"""What the report tells upstream about each rig (issue 35): a rig answers once, over all
its references; a slowdown the first run measured inside the rig's noise floor, with no
A/B asked, is "not shown", never "does not reproduce" (the 30-release replay missed
b10429's -23.9% that way, inside a 27.4% floor); each rig is named once in each list."""

from __future__ import annotations

import pytest

from leaderboard.regressions.models import Verdict, VerdictKind
from leaderboard.regressions.report import NO_RESULT, Report, RigAnswer, SideFigures, _summary
from leaderboard.regressions.report_md import report_markdown
from leaderboard.regressions.states import Confirmation
from leaderboard.regressions.words import DOES_NOT_REPRODUCE, PENDING, REPRODUCES, WITHIN_NOISE, verdict_words

# The 30-release replay's b10429 at 2 threads: the first run's figures, judged no change.
MISSED = {
    "kind": VerdictKind.NONE,
    "effect_pct": -23.9,
    "p_value": 0.00018,
    "alpha": 0.01,
    "threshold_pct": 3.0,
    "noise_k": 5.0,
    "noise_n_runs": 10,
    "noise_spread_pct": 5.48,
    "noise_floor_pct": 27.4,
}


@pytest.mark.parametrize(
    ("change", "answer"),
    [
        ({}, WITHIN_NOISE),
        ({"effect_pct": -2.0}, DOES_NOT_REPRODUCE),  # within the threshold: no change shown
        ({"p_value": 0.2}, DOES_NOT_REPRODUCE),  # not significant
        ({"effect_pct": 23.9}, DOES_NOT_REPRODUCE),  # faster, not slower
        ({"noise_floor_pct": None}, DOES_NOT_REPRODUCE),  # no floor: the rule would have called it
        ({"confirmation": Confirmation.AB_REFUTED}, DOES_NOT_REPRODUCE),  # A/B judged the step
        ({"kind": VerdictKind.REGRESSION, "effect_pct": -30.0}, REPRODUCES),
        ({"kind": VerdictKind.REGRESSION, "confirmation": Confirmation.PENDING}, PENDING),
    ],
)
def test_a_slowdown_inside_the_noise_floor_with_no_ab_is_not_shown(change: dict, answer: str) -> None:
    assert verdict_words(Verdict(**{**MISSED, **change})).answer == answer


def answer(rig: str, reference: str, status: str, *, loaded: bool = False) -> RigAnswer:
    empty = SideFigures(0, None, None, None)
    return RigAnswer(rig=rig, backend="CPU", hardware="", reference_config=reference, status=status, baseline=empty,
                     candidate=empty, effect_pct=None, effect_ci_pct=None, p_value=None, n_pairs=0,
                     pair_spread_pct=None, noise="", how="", verdict_id=None, loaded=loaded)  # fmt: skip


# The b10429 report of the demo: two rigs where blocks confirmed it at 2 threads and not at
# 1 thread, and the 30-release rig, whose first run saw it inside its noise floor.
ANSWERS = [
    answer("quiet", "2 threads", REPRODUCES),
    answer("quiet", "1 thread", DOES_NOT_REPRODUCE),
    answer("loaded", "1 thread", DOES_NOT_REPRODUCE, loaded=True),
    answer("loaded", "2 threads", REPRODUCES, loaded=True),
    answer("window", "1 thread", DOES_NOT_REPRODUCE),
    answer("window", "2 threads", WITHIN_NOISE),
]


def test_the_summary_counts_each_rig_once_and_each_reference_apart() -> None:
    assert _summary(ANSWERS) == [
        "CPU: reproduces on 2 of 2 rigs (1 within the rig's noise floor, not shown either way); by reference: "
        "2 threads: reproduces on 2 of 2 rigs (1 within the rig's noise floor, not shown either way); "
        "1 thread: reproduces on 0 of 3 rigs"
    ]
    # One reference: one count, no breakdown; a rig that could not build is not "pending".
    one = [answer("a", "r", REPRODUCES), answer("b", "r", DOES_NOT_REPRODUCE), answer("c", "", NO_RESULT)]
    assert _summary(one) == ["CPU: reproduces on 1 of 2 rigs (1 without a result)"]


def test_the_markdown_names_each_rig_once_in_each_list() -> None:
    verdict = Verdict(pk=7, **MISSED)
    report = Report(
        verdict=verdict, title="t", repo_url="", branch="master", commit_from="b10423", commit_to="b10429",
        compare_url="", first_bad_commit="", first_bad_subject="", first_bad_url="", bisect_status="",
        answers=[*ANSWERS, answer("other", "1 thread", DOES_NOT_REPRODUCE)], summary=_summary(ANSWERS),
    )  # fmt: skip
    markdown = report_markdown(report)
    assert "Does not reproduce on: other.\n" in markdown  # not "quiet" nor "loaded": both reproduce at 2 threads
    assert "Within the rig's noise floor on: window (" in markdown
    assert "Recorded under load on loaded: those figures" in markdown
    assert "| window | CPU | — | 2 threads | not shown: within the rig's noise floor |" in markdown

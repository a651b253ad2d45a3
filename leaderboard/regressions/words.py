"""A verdict in words: the one presenter of how a verdict stands.

The matrix cell (matrix.py), the timeline (selectors.py, charts.py), the
report (report.py) and the alert (services/alerts.py) all say a verdict's
state through ``verdict_words``, so the same verdict reads the same
everywhere. Pure: it reads the verdict's fields and makes no query."""

from __future__ import annotations

from dataclasses import dataclass

from leaderboard.regressions.models import Verdict, VerdictKind
from leaderboard.regressions.states import Confirmation
from runners.ab_design import AbDesign, ContentionCall

_AB = (Confirmation.AB_CONFIRMED, Confirmation.AB_REFUTED, Confirmation.AB_FOUND)
_RERUN = (Confirmation.CONFIRMED, Confirmation.REFUTED, Confirmation.UNCHECKED)
# The report's answers: whether the regression reproduces on a rig.
REPRODUCES = "reproduces"
DOES_NOT_REPRODUCE = "does not reproduce"
PENDING = "pending"
# A slowdown the first run measured (significant, past the threshold) but inside the rig's
# noise floor, with no A/B asked: the rule called no change, and the data show neither
# that it reproduces nor that it does not (the 30-release replay: b10429 at -23.9%, inside
# a 27.4% floor). "Does not reproduce" would tell upstream what was never shown.
WITHIN_NOISE = "not shown: within the rig's noise floor"


@dataclass(frozen=True)
class VerdictWords:
    """How one verdict stands, in the words every page uses.

    ``state`` is the matrix's CSS class and ``word`` what its cell says
    (regression, improvement, no change, inconclusive); ``detail`` why, when the
    word alone would mislead; ``standing`` the confirmation, mid-sentence
    ("reproduced by A/B pairs"; '' when none was asked); ``evidence`` the
    confirmation with its figures, for the alert ('' when there are none);
    ``source`` which runs the verdict rests on; ``answer`` the report's
    result on this rig and ``how`` how its figures were made."""

    state: str
    word: str
    detail: str
    standing: str
    evidence: str
    source: str
    answer: str
    how: str


def _screened(verdict: Verdict) -> bool:
    """True if A/B judged a step its first run called no change (``screen_every_step``)."""
    if verdict.confirmation == Confirmation.AB_FOUND:
        return True
    return verdict.confirmation == Confirmation.AB_CONFIRMED and verdict.kind == VerdictKind.NONE


def _standing(verdict: Verdict) -> str:
    shown = verdict.get_confirmation_display() if verdict.confirmation else ""
    if _screened(verdict) and verdict.kind == VerdictKind.NONE:
        shown = "No change by A/B"
    if verdict.confirmation in _AB:  # by which A/B: blocks of both servers, or pairs of runs
        shown += " blocks" if verdict.ab_blocks and verdict.ab_design == AbDesign.INTERLEAVED else " pairs"
    return shown[:1].lower() + shown[1:]


def _ab_count(verdict: Verdict) -> str:
    """Return how many A/B units confirmed ``verdict``, named: interleaved blocks, or pairs of runs."""
    n = verdict.ab_n_pairs
    if verdict.ab_blocks and verdict.ab_design == AbDesign.INTERLEAVED:
        return f"{n} interleaved A/B block{'s' if n != 1 else ''}"
    return f"{n} A/B pair{'s' if n != 1 else ''}"


def _source(verdict: Verdict) -> str:
    pairs = _ab_count(verdict)
    if verdict.fanout_of_id is not None:
        return f"fan-out: {pairs} checking a regression found on another rig"
    if _screened(verdict):
        return f"nightly run + A/B screen of every step ({pairs})"
    if verdict.confirmation in _AB:
        return f"nightly run + A/B confirmation ({pairs})"
    if verdict.confirmation in _RERUN:
        return "nightly run + re-run"
    if verdict.confirmation == Confirmation.PENDING:
        return "nightly run, confirmation queued"
    return "nightly run"


def _evidence(verdict: Verdict) -> str:
    if verdict.confirmation == Confirmation.CONFIRMED and verdict.confirm_effect_pct is not None:
        return f"reproduced by a re-run of the same build: {verdict.confirm_effect_pct:+.2f}%"
    if verdict.confirmation == Confirmation.UNCHECKED:
        return "not re-run (the re-run failed): one run's verdict"
    p_value = verdict.ab_p_value if verdict.ab_p_value is not None else 1
    if verdict.confirmation == Confirmation.AB_FOUND and verdict.ab_effect_pct is not None:
        return (
            f"found by {_ab_count(verdict)} of baseline and candidate on the same rig, where the nightly "
            f"run saw no change ({verdict.effect_pct or 0:+.2f}%): {verdict.ab_effect_pct:+.2f}% (p={p_value:.2g})"
        )
    if verdict.confirmation == Confirmation.AB_CONFIRMED and verdict.ab_effect_pct is not None:
        return (
            f"reproduced by {_ab_count(verdict)} of baseline and candidate on the same rig: "
            f"{verdict.ab_effect_pct:+.2f}% (p={p_value:.2g})"
        )
    return ""


def _cell(verdict: Verdict, standing: str) -> tuple[str, str, str]:
    """Return the matrix's (state, word, detail): a change that stands is a
    regression or improvement, one still awaiting its confirmation is
    inconclusive, anything else (a change not reproduced included) no change;
    a first build, with nothing to compare with, is inconclusive."""
    # A fan-out's verdict has its baseline commit's A/B runs, never a baseline build.
    if verdict.baseline_build_id is None and verdict.fanout_of_id is None and verdict.kind == VerdictKind.NONE:
        return "inconclusive", "inconclusive", "nothing to compare with yet (a first build)"
    if verdict.kind == VerdictKind.NONE:
        return "none", "no change", standing
    if verdict.confirmation == Confirmation.PENDING:
        return "inconclusive", "inconclusive", f"{verdict.get_kind_display().lower()}, awaiting a re-run"
    if not verdict.stands:
        return "inconclusive", "inconclusive", standing
    return str(verdict.kind), str(verdict.kind), standing


def _masked_by_noise(verdict: Verdict) -> bool:
    """True if the first run alone judged a slowdown past the threshold and significant
    no change because it lay inside the noise floor (verdict.judge's third reason)."""
    effect, p_value = verdict.effect_pct, verdict.p_value
    if verdict.kind != VerdictKind.NONE or verdict.confirmation in _AB or effect is None or p_value is None:
        return False
    slower = effect < 0  # decode t/s: higher is better
    return slower and p_value < verdict.alpha and abs(effect) > verdict.threshold_pct and verdict.noise.contains(effect)


def _answer(verdict: Verdict) -> str:
    if verdict.confirmation == Confirmation.PENDING:
        return PENDING
    if verdict.kind == VerdictKind.REGRESSION and verdict.stands:
        return REPRODUCES
    return WITHIN_NOISE if _masked_by_noise(verdict) else DOES_NOT_REPRODUCE


def _how(verdict: Verdict, n_pairs: int) -> str:
    if verdict.ab_blocks:
        if verdict.ab_design == AbDesign.INTERLEAVED:
            how = (f"A/B, {verdict.ab_n_pairs} interleaved blocks (both servers resident, repetitions "
                   "alternated A B B A, fresh processes each block)")  # fmt: skip
        else:
            how = f"A/B, {verdict.ab_n_pairs} run-level pairs (ABBA: two servers did not fit in the rig's memory)"
        if verdict.ab_contention == ContentionCall.UNEVEN:
            how += "; A and B ran under different contention"
        if verdict.confirmation == Confirmation.AB_FOUND:
            how += f"; found where the nightly run saw no change ({verdict.effect_pct or 0:+.2f}%)"
        return how
    if n_pairs:
        how = f"A/B, {verdict.ab_n_pairs or n_pairs} interleaved pairs (ABBA)"
        if verdict.ab_design:
            how += f", design {verdict.ab_design}"
        if verdict.ab_contention == ContentionCall.UNEVEN:
            how += "; A and B ran under different contention"
        return how
    how = "one run each (medians of n repetitions)"
    if verdict.confirm_effect_pct is not None:
        how += f"; re-run {verdict.confirm_effect_pct:+.2f}%"
    return how


def verdict_words(verdict: Verdict, *, n_pairs: int = 0) -> VerdictWords:
    """Return how ``verdict`` stands, in words; ``n_pairs`` is how many A/B pairs
    it has (the report counts them; pages that do not say "how" leave it 0)."""
    standing = _standing(verdict)
    state, word, detail = _cell(verdict, standing)
    return VerdictWords(
        state=state,
        word=word,
        detail=detail,
        standing=standing,
        evidence=_evidence(verdict),
        source=_source(verdict),
        answer=_answer(verdict),
        how=_how(verdict, n_pairs),
    )

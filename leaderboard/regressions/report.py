"""The regression report upstream can act on: one confirmed regression, every
rig's answer on the same commit range, and the command lines that reproduce it.

``regression_report(verdict_id=…)`` gathers it (a dataclass, no HTML);
``report_markdown`` writes it as Markdown ready to paste into a llama.cpp
issue; the page (views_report.py) and the alert webhook (services/alerts.py)
use the same two.

Per rig, the figures are those of the test that was used, each side as mean
[95% CI] (n) and the effect with its 95% CI:

- A/B blocks (regressions/ab_blocks.py): each side's mean decode rate in every
  block judged, n blocks; the effect is the blocks' mean log ratio (each the
  mean of its adjacent A,B units), its CI and p from the t-test on the blocks;
- A/B pairs (regressions/ab.py): the baseline (A) and candidate (B) run
  medians of the pairs, n pairs; the effect is the pairs' mean log ratio, its
  CI and p from the paired t-test;
- the re-run rule (one run each, Mann–Whitney U): each run's repetitions, n
  repetitions; the effect is the difference of the mean log repetitions, its
  CI from Welch's t on them, p the U test's.

Each rig's noise is said in words (verdict.noise_words), and a recording whose
runs spread like a busy machine's is marked as under load: its figures are
not the rig's speed. The Reproduce block (reproduce.py) names nothing of the
recording machine."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field

from django.db.models import Q, QuerySet
from django.http import Http404

from leaderboard.core.labels import field_label
from leaderboard.regressions.ab_blocks import judged_blocks, side_means
from leaderboard.regressions.backends import subscription_backend
from leaderboard.regressions.models import BuildStatus, Verdict, VerdictKind
from leaderboard.regressions.repos import commit_subjects
from leaderboard.regressions.reproduce import Reproduce, public_repo, reproduce_of
from leaderboard.regressions.selectors_aa import AA_OVER_LEVEL, RigAaSummary, rigs_aa_summaries
from leaderboard.regressions.states import BENCHMARKED_PHASES
from leaderboard.regressions.verdict import noise_words, spread_loaded
from leaderboard.regressions.words import DOES_NOT_REPRODUCE, PENDING, REPRODUCES, WITHIN_NOISE, verdict_words
from leaderboard.results.models import Rig
from runners.ab_design import AbDesign, Side
from runners.builds.releases import release_number, release_url
from runners.portable import portable_text
from runners.stats import t_quantile_975

TEST_AB = "A/B pairs: paired t-test on the pairs' log ratios"
TEST_BLOCKS = "A/B blocks: t-test on the blocks' mean log ratios (repetitions alternated A B B A in each block)"
TEST_RERUN = "re-run rule: Mann–Whitney U on one run's repetitions each"
# A fan-out rig that could not build or run its pairs.
NO_RESULT = "no result"


@dataclass(frozen=True)
class SideFigures:
    """One side's run medians: n, mean and 95% CI of the mean (None below 2)."""

    n: int
    mean: float | None
    ci_low: float | None
    ci_high: float | None

    @classmethod
    def of(cls, values: Sequence[float | None]) -> SideFigures:
        clean = [v for v in values if v is not None and math.isfinite(v)]
        if not clean:
            return cls(0, None, None, None)
        mean = statistics.fmean(clean)
        if len(clean) < 2:
            return cls(1, mean, None, None)
        half = t_quantile_975(len(clean) - 1) * statistics.stdev(clean) / math.sqrt(len(clean))
        return cls(len(clean), mean, mean - half, mean + half)

    def text(self) -> str:
        if self.mean is None:
            return "—"
        if self.ci_low is None or self.ci_high is None:
            return f"{self.mean:.2f} (n={self.n})"
        return f"{self.mean:.2f} [{self.ci_low:.2f}, {self.ci_high:.2f}] (n={self.n})"


@dataclass(frozen=True)
class RigAnswer:
    """One rig's answer on the regression's commit range."""

    rig: str
    backend: str
    hardware: str
    reference_config: str
    status: str  # words.py's answer (reproduces, does not reproduce, within the noise floor, pending) or "no result"
    baseline: SideFigures
    candidate: SideFigures
    effect_pct: float | None
    effect_ci_pct: tuple[float, float] | None
    p_value: float | None
    n_pairs: int
    pair_spread_pct: float | None
    noise: str
    how: str
    verdict_id: int | None
    test: str = ""
    noise_words: str = ""
    loaded: bool = False


@dataclass(frozen=True)
class Report:
    verdict: Verdict
    title: str
    repo_url: str
    branch: str
    commit_from: str
    commit_to: str
    compare_url: str
    first_bad_commit: str
    first_bad_subject: str
    first_bad_url: str
    bisect_status: str
    answers: list[RigAnswer]
    summary: list[str] = field(default_factory=list)
    reproduce: Reproduce | None = None
    repo_label: str = ""
    where: str = ""


def _github_commit_url(repo_url: str, sha: str) -> str:
    """Return the commit's page upstream, or a release's (``bN``); '' for a repository that is no URL."""
    number = release_number(sha)
    if number is not None:
        return release_url(number)
    url = repo_url.strip().removesuffix("/").removesuffix(".git")
    return f"{url}/commit/{sha}" if sha and url.startswith(("https://", "http://")) else ""


def log_effect_ci(candidate: Sequence[float], baseline: Sequence[float]) -> tuple[float, tuple[float, float] | None]:
    """Return the change from ``baseline`` to ``candidate`` samples in percent
    (the difference of their mean logs) and its 95% CI by Welch's t on the
    logs (None below two samples a side or with no spread at all)."""
    a = [math.log(v) for v in baseline if v > 0 and math.isfinite(v)]
    b = [math.log(v) for v in candidate if v > 0 and math.isfinite(v)]
    diff = statistics.fmean(b) - statistics.fmean(a)
    if len(a) < 2 or len(b) < 2:
        return 100.0 * math.expm1(diff), None
    va, vb = statistics.variance(a) / len(a), statistics.variance(b) / len(b)
    if va + vb == 0:
        return 100.0 * math.expm1(diff), None
    df = (va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1))
    half = t_quantile_975(max(1, math.floor(df))) * math.sqrt(va + vb)
    return 100.0 * math.expm1(diff), (100.0 * math.expm1(diff - half), 100.0 * math.expm1(diff + half))


def _answer(verdict: Verdict, aa: dict[int, RigAaSummary] | None = None) -> RigAnswer:
    sub = verdict.build.subscription
    pairs = list(verdict.pairs())
    effect_rerun: tuple[float, tuple[float, float] | None] | None = None
    blocks = judged_blocks(verdict.ab_blocks)
    if blocks and verdict.ab_effect_pct is not None:
        baseline, candidate = (SideFigures.of(side_means(blocks, side)) for side in (Side.A, Side.B))
        test = TEST_BLOCKS if verdict.ab_design == AbDesign.INTERLEAVED else TEST_AB
    elif pairs:
        baseline = SideFigures.of([p.a_median for p in pairs])
        candidate = SideFigures.of([p.b_median for p in pairs])
        test = TEST_AB
    else:
        # The runs the verdict was judged on: each side's repetitions (the baseline's runs together).
        base_samples = [v for run in verdict.baseline_runs.all() for v in run.build_decode_samples()]
        new_samples = verdict.new_run.build_decode_samples()
        baseline, candidate = SideFigures.of(base_samples), SideFigures.of(new_samples)
        effect_rerun = log_effect_ci(new_samples, base_samples) if base_samples and new_samples else None
        test = TEST_RERUN
    words = verdict_words(verdict, n_pairs=len(pairs))
    how = words.how
    summary = (aa or {}).get(sub.rig_id)
    if summary is not None and summary.exceeds_level:
        how += f"; {AA_OVER_LEVEL} ({summary.describe()})"
    ab = verdict.ab_effect_pct is not None
    ci = (verdict.ab_ci_low_pct, verdict.ab_ci_high_pct) if ab else (None, None)
    effect_pct = verdict.ab_effect_pct if ab else verdict.effect_pct
    effect_ci = (ci[0], ci[1]) if ci[0] is not None and ci[1] is not None else None
    if not ab and effect_rerun is not None:
        effect_pct, effect_ci = effect_rerun
    return RigAnswer(
        rig=sub.rig.name,
        backend=subscription_backend(sub),
        hardware=sub.rig.gpu_summary() or sub.rig.cpu or "",
        reference_config=verdict.reference_config.name,
        status=words.answer,
        baseline=baseline,
        candidate=candidate,
        effect_pct=effect_pct,
        effect_ci_pct=effect_ci,
        p_value=verdict.ab_p_value if ab else verdict.p_value,
        n_pairs=verdict.ab_n_pairs if blocks else len(pairs),
        pair_spread_pct=verdict.ab_spread_pct,
        noise=verdict.noise.describe(),
        how=how,
        verdict_id=verdict.pk,
        test=test,
        noise_words=noise_words(verdict.noise),
        loaded=spread_loaded(verdict.noise_spread_pct) or spread_loaded(verdict.ab_spread_pct),
    )


def rig_standing(answers: Sequence[RigAnswer]) -> str:
    """Return one rig's answer over its references: it reproduces if any of them does;
    else pending, else within its noise floor, else does not reproduce; "no result"
    when none of them gave one."""
    statuses = {a.status for a in answers}
    for status in (REPRODUCES, PENDING, WITHIN_NOISE, DOES_NOT_REPRODUCE):
        if status in statuses:
            return status
    return NO_RESULT


def rigs_by_standing(answers: Sequence[RigAnswer]) -> dict[str, list[str]]:
    """Return the rigs of ``answers`` by their standing (``rig_standing``), each rig once, in order."""
    by_rig: dict[str, list[RigAnswer]] = {}
    for a in answers:
        by_rig.setdefault(a.rig, []).append(a)
    found: dict[str, list[str]] = {}
    for rig, mine in by_rig.items():
        found.setdefault(rig_standing(mine), []).append(rig)
    return found


def _count_line(label: str, answers: Sequence[RigAnswer]) -> str:
    """Return "<label>: reproduces on Y of N rigs", N the rigs that answered yes or no,
    and the others named by count (pending, within their noise floor, no result)."""
    standing = rigs_by_standing(answers)
    yes, no = len(standing.get(REPRODUCES, [])), len(standing.get(DOES_NOT_REPRODUCE, []))
    settled = yes + no
    line = f"{label}: reproduces on {yes} of {settled} rig{'s' if settled != 1 else ''}"
    others = [
        f"{len(standing[status])} {words}"
        for status, words in (
            (PENDING, "pending"),
            (WITHIN_NOISE, "within the rig's noise floor, not shown either way"),
            (NO_RESULT, "without a result"),
        )
        if standing.get(status)
    ]
    return line + (f" ({'; '.join(others)})" if others else "")


def _summary(answers: Sequence[RigAnswer]) -> list[str]:
    """Return one line per backend; a backend whose rigs answered on several references
    says each reference's count after the rigs' (a rig reproduces if any of its
    references does): a rig that is slower at 2 threads and not at 1 is one rig that
    reproduces, and the reference says where."""
    lines = []
    for backend in sorted({a.backend for a in answers}):
        mine = [a for a in answers if a.backend == backend]
        line = _count_line(backend, mine)
        references = list(dict.fromkeys(a.reference_config for a in mine if a.reference_config))
        if len(references) > 1:
            per_reference = [_count_line(ref, [a for a in mine if a.reference_config == ref]) for ref in references]
            line += "; by reference: " + "; ".join(per_reference)
        lines.append(line)
    return lines


def regression_report(*, verdict_id: int, rigs: QuerySet[Rig] | None = None) -> Report:
    """Return the report for a regression verdict (a fan-out verdict gives its
    origin's report), made of the rigs in ``rigs`` (a page passes
    ``Rig.objects.visible_to(viewer)``; None, every rig: the alert to the
    subscription's own addresses). Raise Http404 for no such verdict, one that
    was never a regression on its own rig, or one whose rig is not in ``rigs``."""
    shown = Rig.objects.all() if rigs is None else rigs
    verdict = (
        Verdict.objects.select_related("build__subscription__rig", "reference_config", "new_run__configuration")
        .filter(pk=verdict_id)
        .first()
    )
    if verdict is not None and verdict.fanout_of_id is not None:
        verdict = verdict.fanout_of
    if verdict is None or verdict.kind != VerdictKind.REGRESSION:
        raise Http404("no regression with this id")
    if not shown.filter(pk=verdict.build.subscription.rig_id).exists():
        raise Http404("no regression with this id")  # a hidden rig's: as if there were none
    sub = verdict.build.subscription
    same_range = (
        Verdict.objects.filter(
            Q(fanout_of=verdict)
            | Q(
                commit_to=verdict.commit_to,
                build__subscription__repo_url=sub.repo_url,
                build__subscription__branch=sub.branch,
                build__bisect_of__isnull=True,
                fanout_of__isnull=True,
            )
        )
        .exclude(pk=verdict.pk)
        .filter(build__subscription__rig__in=shown)
    )
    others = same_range.select_related("build__subscription__rig", "reference_config").order_by(
        "build__subscription__rig__name", "id"
    )
    aa = rigs_aa_summaries(rig_ids=[verdict.build.subscription.rig_id, *(v.build.subscription.rig_id for v in others)])
    answers = [_answer(verdict, aa), *(_answer(v, aa) for v in others)]
    # Fan-out builds without a verdict: pairs not all back yet, or the rig could not build.
    empty = SideFigures(0, None, None, None)
    for build in verdict.fanout_builds.select_related("subscription__rig").filter(
        verdicts__isnull=True, subscription__rig__in=shown
    ):
        status = PENDING if build.status == BuildStatus.QUEUED or build.status in BENCHMARKED_PHASES else NO_RESULT
        how = "A/B pairs queued" if status == PENDING else f"{build.get_status_display()}: {build.error[:120]}"
        answers.append(
            RigAnswer(
                rig=build.subscription.rig.name,
                backend=subscription_backend(build.subscription),
                hardware="",
                reference_config="",
                status=status,
                baseline=empty,
                candidate=empty,
                effect_pct=None,
                effect_ci_pct=None,
                p_value=None,
                n_pairs=0,
                pair_spread_pct=None,
                noise="",
                how=how,
                verdict_id=None,
            )  # fmt: skip
        )
    first_bad = verdict.first_bad_commit
    subject = commit_subjects(sub.repo_url, [first_bad or verdict.commit_to], rigs=shown).get(
        first_bad or verdict.commit_to, ""
    )
    effect = f"{answers[0].effect_pct or 0:+.1f}%"
    where = first_bad or verdict.commit_to
    title = f"Decode regression ({effect} {field_label(verdict.metric)}) at {where[:10]} on {sub.rig.name}"
    return Report(
        verdict=verdict,
        title=title,
        # A report is pasted into an upstream issue: the recording rig's paths and ports mean nothing there.
        repo_url=portable_text(sub.repo_url),
        branch=sub.branch,
        commit_from=verdict.commit_from,
        commit_to=verdict.commit_to,
        compare_url=verdict.compare_url,
        first_bad_commit=first_bad,
        first_bad_subject=subject,
        first_bad_url=_github_commit_url(sub.repo_url, where),
        bisect_status=verdict.get_bisect_status_display() if verdict.bisect_status else "not bisected",
        answers=answers,
        summary=_summary(answers),
        reproduce=reproduce_of(verdict, where=where),
        repo_label=public_repo(sub.repo_url),
        where=where_words(verdict),
    )


def where_words(verdict: Verdict) -> str:
    """Return, in a sentence, where the change was found: the first slow commit
    (bisected, inside which two releases), the first slow release (between
    two consecutive releases), or only the range, with bisection's state."""
    first, window = verdict.first_bad_commit, (verdict.release_window_from, verdict.release_window_to)
    inside = f"between releases {window[0]} and {window[1]} (consecutive)" if all(window) else ""
    if first and release_number(first) is not None:
        return f"First slow release: {first}, {inside or f'after {verdict.bisect_good}'}; no git history was bisected."
    if first:
        return f"First slow commit (bisected): {first}" + (f", {inside}" if inside else "") + "."
    state = verdict.get_bisect_status_display().lower() if verdict.bisect_status else "not bisected"
    return (
        f"Somewhere in {verdict.commit_from or '?'}..{verdict.commit_to} ({state})"
        + (f"; narrowed to {inside}" if inside else "")
        + "."
    )

"""A/B confirmation and its fan-out to the other rigs of a branch.

A change verdict on a subscription with ``confirm_mode`` A/B is *pending*
while the rig runs the baseline build (A, the verdict's ``commit_from``) and
the candidate build (B) in ABBA order, both from its build cache (the A runs
are BuildRuns of the candidate build with ``run_commit`` set to the baseline
commit, so the rig picks that binary). Each batch of pairs comes back as a
build report; the pairs are judged by the sequential rule in
regressions/ab.py, and while it says "continue" the next batch is queued. The
answer settles the verdict: confirmed (the same change), or refuted (no
change, or inconclusive at the limit). Every pair is a ConfirmationPair.

Fan-out: a regression confirmed this way queues the same A/B pairs on every
other active subscription of the same repository and branch that has not
built the candidate commit itself: a BuildRecord of the candidate commit
tagged ``fanout_of`` (the rig builds both commits, or finds them cached),
judged by pairs only, whose verdict (``fanout_of`` the first) says whether
the regression reproduces on that rig (queued by services/fanout.py). Fan-out
builds and A-side runs are never baselines or noise history
(``BuildRun.objects.nightly_history``).

This module adds the pairs and judges them; services/confirmation.py sends
them and acts on what stands."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from django.db.models import Max

from leaderboard.regressions.ab import AbOutcome, Decision, Pair, Plan, ab_judge, ab_order
from leaderboard.regressions.models import (
    BuildRecord,
    BuildRun,
    ConfirmationPair,
    ReferenceConfig,
    Subscription,
    Verdict,
    VerdictKind,
)
from leaderboard.regressions.states import BuildRunRole, BuildRunStatus, Confirmation, confirmation_move
from leaderboard.regressions.verdict import METRIC, Kind, compare_url, run_median
from leaderboard.results.models import Run, RunStatus
from runners.ab_design import AbDesign


def ab_plan(subscription: Subscription) -> Plan:
    """Return the sequential plan the subscription's settings give."""
    max_pairs = max(2, subscription.ab_max_pairs)
    return Plan(
        alpha=subscription.alpha,
        threshold_pct=subscription.threshold_pct,
        first_pairs=min(Plan.first_pairs, max_pairs),
        max_pairs=max_pairs,
    )


def ab_pairs_add(*, build: BuildRecord, reference_config: ReferenceConfig, a_commit: str, count: int) -> int:
    """Add ``count`` pairs (two BuildRuns each, in ABBA order by repeat, the
    order the rig runs them) to the build; return how many pairs it has now."""
    last_repeat = BuildRun.objects.filter(build=build).aggregate(last=Max("repeat"))["last"]
    repeat = (last_repeat if last_repeat is not None else 0) + 1
    start = ConfirmationPair.objects.filter(build=build, reference_config=reference_config).count()
    for index in range(start, start + count):
        a_first = ab_order(index)
        runs = {}
        for role in (BuildRunRole.AB_A, BuildRunRole.AB_B) if a_first else (BuildRunRole.AB_B, BuildRunRole.AB_A):
            runs[role] = BuildRun.objects.create(
                build=build,
                reference_config=reference_config,
                repeat=repeat,
                role=role,
                run_commit=a_commit if role == BuildRunRole.AB_A else "",
            )
            repeat += 1
        ConfirmationPair.objects.create(
            build=build,
            reference_config=reference_config,
            index=index,
            a_first=a_first,
            a_commit=a_commit,
            a_run=runs[BuildRunRole.AB_A],
            b_run=runs[BuildRunRole.AB_B],
        )
    return start + count


def ab_pairs_queue(*, build: BuildRecord, verdicts: Sequence[Verdict]) -> list[Verdict]:
    """Add the first pairs of each change verdict with a baseline commit and
    mark those verdicts pending (the caller sends them). Return the verdicts marked."""
    todo = [v for v in verdicts if v.kind != VerdictKind.NONE and v.commit_from]
    plan = ab_plan(build.subscription)
    for verdict in todo:
        ab_pairs_add(
            build=build, reference_config=verdict.reference_config, a_commit=verdict.commit_from,
            count=plan.first_pairs,
        )  # fmt: skip
        confirmation_move(verdict, Confirmation.PENDING)
        verdict.save(update_fields=["confirmation"])
    return todo


@dataclass(frozen=True)
class PairsJudged:
    """What judging a build's reported pairs came to: its verdicts, whether
    another batch of pairs was added (to be sent), and whether some reference
    config still waits on pairs the rig has not reported."""

    verdicts: list[Verdict]
    more: bool
    waiting: bool


def _fill_medians(pairs: Sequence[ConfirmationPair]) -> None:
    uuids = [p.a_run.run_uuid for p in pairs] + [p.b_run.run_uuid for p in pairs]
    runs = {
        r.uuid: r for r in Run.objects.filter(uuid__in=uuids, status=RunStatus.FINISHED).prefetch_related("samples")
    }
    for pair in pairs:
        a, b = runs.get(pair.a_run.run_uuid), runs.get(pair.b_run.run_uuid)
        pair.a_median = run_median(a.build_decode_samples()) if a else None
        pair.b_median = run_median(b.build_decode_samples()) if b else None
        pair.save(update_fields=["a_median", "b_median"])


def ab_pairs_judge(*, build: BuildRecord) -> PairsJudged:
    """Judge the reported pairs of each reference config on ``build``: add the
    next batch while the rule says continue, else answer (the verdict
    confirmed or refuted; a fan-out build's verdict is made here). Pairs not
    all reported leave their verdict pending. The caller runs this in a transaction."""
    plan = ab_plan(build.subscription)
    refs = ReferenceConfig.objects.filter(confirmation_pairs__build=build).distinct()
    more = waiting = False
    for ref in refs:
        pairs = list(
            ConfirmationPair.objects.filter(build=build, reference_config=ref).select_related("a_run", "b_run")
        )
        if any(BuildRunStatus.QUEUED in (p.a_run.status, p.b_run.status) for p in pairs):
            waiting = True
            continue
        verdict = build.verdicts.filter(reference_config=ref, metric=METRIC).first()
        if verdict is not None and verdict.confirmation != Confirmation.PENDING:
            continue
        _fill_medians(pairs)
        last_batch = pairs[-(plan.step_pairs if len(pairs) > plan.first_pairs else plan.first_pairs) :]
        if all(p.a_median is None or p.b_median is None for p in last_batch):
            if verdict is not None:  # a fan-out whose pairs never ran has none: its build says why
                confirmation_move(verdict, Confirmation.UNCHECKED)
                verdict.reason_add("the A/B pairs did not run; the first run stands")
                verdict.save(update_fields=["confirmation", "reason"])
            continue
        outcome = ab_judge([Pair(p.a_median or 0.0, p.b_median or 0.0, p.a_first) for p in pairs], plan)
        if outcome.decision == Decision.CONTINUE:
            ab_pairs_add(
                build=build, reference_config=ref, a_commit=pairs[0].a_commit, count=plan.next_batch(len(pairs))
            )
            more = True
        elif verdict is None:
            _fanout_verdict_create(build, ref, pairs, outcome)
        else:
            ab_answer_apply(verdict, outcome)
    verdicts = list(build.verdicts.select_related("reference_config").order_by("id"))
    return PairsJudged(verdicts, more, waiting)


def _ab_figures(outcome: AbOutcome, design: str = AbDesign.RUN_ABBA) -> dict[str, object]:
    return {
        "ab_n_pairs": outcome.n_pairs,
        "ab_effect_pct": outcome.effect_pct,
        "ab_ci_low_pct": outcome.ci_low_pct,
        "ab_ci_high_pct": outcome.ci_high_pct,
        "ab_p_value": outcome.p_value,
        "ab_spread_pct": outcome.spread_pct,
        "ab_decision": outcome.decision.value,
        "confirm_effect_pct": outcome.effect_pct,
        # Pairs of BuildRuns are run-level ABBA; a blocks confirmation says which design its rig ran.
        "ab_design": design,
    }


def ab_answer_apply(verdict: Verdict, outcome: AbOutcome, *, design: str = AbDesign.RUN_ABBA) -> None:
    """Settle a pending verdict with the A/B answer (pairs, or blocks in
    ``design``): confirmed when it gives the verdict's kind; found when the
    verdict was no change (a screened step) and the A/B shows one, which the
    verdict then is; else refuted."""
    for name, value in _ab_figures(outcome, design).items():
        setattr(verdict, name, value)
    found = outcome.decision.kind
    if found == Kind(verdict.kind):
        confirmation_move(verdict, Confirmation.AB_CONFIRMED)
        verdict.reason = f"{outcome.reason}; first run {verdict.effect_pct or 0:+.2f}%"[:300]
    elif verdict.kind == VerdictKind.NONE:
        confirmation_move(verdict, Confirmation.AB_FOUND)
        verdict.reason = (
            f"found by A/B: {outcome.reason}; the first run saw no change "
            f"({verdict.effect_pct or 0:+.2f}%, p={verdict.p_value if verdict.p_value is not None else 1:.2g})"
        )[:300]
        verdict.kind = found.value
    else:
        confirmation_move(verdict, Confirmation.AB_REFUTED)
        verdict.reason = (
            f"not reproduced: {outcome.reason}; first run {verdict.effect_pct or 0:+.2f}%, p={verdict.p_value or 0:.2g}"
        )[:300]
        verdict.kind = VerdictKind.NONE
    verdict.save()


def _fanout_verdict_create(
    build: BuildRecord, ref: ReferenceConfig, pairs: Sequence[ConfirmationPair], outcome: AbOutcome
) -> None:
    b_run = Run.objects.filter(uuid__in=[p.b_run.run_uuid for p in pairs], status=RunStatus.FINISHED).first()
    if b_run is None or build.fanout_of is None:
        return
    origin = build.fanout_of
    kind = outcome.decision.kind
    sub = build.subscription
    a_medians = [p.a_median for p in pairs if p.a_median]
    b_medians = [p.b_median for p in pairs if p.b_median]
    Verdict.objects.update_or_create(
        build=build,
        reference_config=ref,
        metric=METRIC,
        defaults={
            **_ab_figures(outcome),
            "new_run": b_run,
            "kind": kind.value,
            "p_value": outcome.p_value,
            "effect_pct": outcome.effect_pct,
            "new_median": sorted(b_medians)[len(b_medians) // 2] if b_medians else None,
            "baseline_median": sorted(a_medians)[len(a_medians) // 2] if a_medians else None,
            "n_new": len(b_medians),
            "n_baseline": len(a_medians),
            "alpha": sub.alpha,
            "threshold_pct": sub.threshold_pct,
            # Made answered: a fan-out verdict is the pairs' answer, never held pending.
            "confirmation": Confirmation.AB_REFUTED if kind == Kind.NONE else Confirmation.AB_CONFIRMED,
            "reason": f"fan-out of verdict {origin.pk}: {outcome.reason}"[:300],
            "fanout_of": origin,
            "commit_from": pairs[0].a_commit,
            "commit_to": build.commit,
            "compare_url": compare_url(sub.repo_url, pairs[0].a_commit, build.commit),
        },
    )

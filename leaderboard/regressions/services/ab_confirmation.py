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
the regression reproduces on that rig. Fan-out builds and A-side runs are
never baselines or noise history (services/verdicts.py)."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence

from django.db import transaction
from django.db.models import Max

from leaderboard.regressions.ab import Decision, Pair, Plan, ab_judge, ab_order
from leaderboard.regressions.models import (
    BuildRecord,
    BuildRun,
    Confirmation,
    ConfirmationPair,
    ReferenceConfig,
    Subscription,
    Verdict,
    VerdictKind,
)
from leaderboard.regressions.services.detection import build_send
from leaderboard.regressions.verdict import compare_url, run_median
from leaderboard.results.models import Run, RunStatus
from runners.builds.ab_design import AbDesign

logger = logging.getLogger(__name__)
METRIC = "decode_tokens_per_s"


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
        for side in ("a", "b") if a_first else ("b", "a"):
            runs[side] = BuildRun.objects.create(
                build=build,
                reference_config=reference_config,
                repeat=repeat,
                confirms=True,
                run_commit=a_commit if side == "a" else "",
            )
            repeat += 1
        ConfirmationPair.objects.create(
            build=build,
            reference_config=reference_config,
            index=index,
            a_first=a_first,
            a_commit=a_commit,
            a_run=runs["a"],
            b_run=runs["b"],
        )
    return start + count


def _send_on_commit(build: BuildRecord) -> None:
    build.celery_task_id = str(uuid.uuid4())
    build.save(update_fields=["celery_task_id"])
    transaction.on_commit(lambda: _send(build.pk))


def _send(build_id: int) -> None:
    build = BuildRecord.objects.select_related("subscription__rig").get(pk=build_id)
    if build_send(build):
        return
    note = f"A/B pairs not queued ({build.error[:80]}); the first run stands"
    for verdict in build.verdicts.filter(confirmation=Confirmation.PENDING):
        verdict.confirmation = Confirmation.UNCHECKED
        verdict.reason = f"{verdict.reason[: 296 - len(note)]}; {note}"[:300]
        verdict.save(update_fields=["confirmation", "reason"])
    build.build_runs.filter(confirms=True, status="").update(status="failed", error=build.error)


def ab_queue(*, build: BuildRecord, verdicts: Sequence[Verdict]) -> list[Verdict]:
    """Mark the build's change verdicts pending and queue their first pairs
    (one job to the rig, sent once committed). Return the verdicts marked."""
    todo = [v for v in verdicts if v.kind != VerdictKind.NONE and not v.confirmation and v.commit_from]
    if not todo:
        return []
    plan = ab_plan(build.subscription)
    with transaction.atomic():
        for verdict in todo:
            ab_pairs_add(
                build=build, reference_config=verdict.reference_config, a_commit=verdict.commit_from,
                count=plan.first_pairs,
            )  # fmt: skip
            verdict.confirmation = Confirmation.PENDING
            verdict.save(update_fields=["confirmation"])
        _send_on_commit(build)
    return todo


def _fill_medians(pairs: Sequence[ConfirmationPair]) -> None:
    uuids = [p.a_run.run_uuid for p in pairs] + [p.b_run.run_uuid for p in pairs]
    runs = {
        r.uuid: r for r in Run.objects.filter(uuid__in=uuids, status=RunStatus.FINISHED).prefetch_related("samples")
    }
    for pair in pairs:
        a, b = runs.get(pair.a_run.run_uuid), runs.get(pair.b_run.run_uuid)
        pair.a_median = run_median(a.decode_samples()) if a else None
        pair.b_median = run_median(b.decode_samples()) if b else None
        pair.save(update_fields=["a_median", "b_median"])


def ab_settle(*, build: BuildRecord) -> list[Verdict]:
    """Judge the reported pairs of each reference config on ``build``: queue
    the next batch while the rule says continue, else settle the verdict (a
    fan-out build's verdict is made here). Pairs not all reported leave it
    pending. Return the build's verdicts."""
    plan = ab_plan(build.subscription)
    refs = ReferenceConfig.objects.filter(confirmation_pairs__build=build).distinct()
    more = False
    with transaction.atomic():
        for ref in refs:
            pairs = list(
                ConfirmationPair.objects.filter(build=build, reference_config=ref).select_related("a_run", "b_run")
            )
            if any(not p.a_run.status or not p.b_run.status for p in pairs):
                continue
            verdict = build.verdicts.filter(reference_config=ref, metric=METRIC).first()
            if verdict is not None and verdict.confirmation != Confirmation.PENDING:
                continue
            _fill_medians(pairs)
            last_batch = pairs[-(plan.step_pairs if len(pairs) > plan.first_pairs else plan.first_pairs) :]
            if all(p.a_median is None or p.b_median is None for p in last_batch):
                _settle_unrun(build, ref, verdict)
                continue
            outcome = ab_judge([Pair(p.a_median or 0.0, p.b_median or 0.0, p.a_first) for p in pairs], plan)
            if outcome.decision == Decision.CONTINUE:
                ab_pairs_add(
                    build=build, reference_config=ref, a_commit=pairs[0].a_commit,
                    count=plan.next_batch(len(pairs)),
                )  # fmt: skip
                more = True
                continue
            _settle(build, ref, verdict, pairs, outcome)
        if more:
            _send_on_commit(build)
    return list(build.verdicts.select_related("reference_config").order_by("id"))


def _settle_unrun(build: BuildRecord, ref: ReferenceConfig, verdict: Verdict | None) -> None:
    if verdict is None:
        return  # a fan-out whose pairs never ran: its build says why
    note = "the A/B pairs did not run; the first run stands"
    verdict.confirmation = Confirmation.UNCHECKED
    verdict.reason = f"{verdict.reason[: 296 - len(note)]}; {note}"[:300]
    verdict.save(update_fields=["confirmation", "reason"])


def _settle(build: BuildRecord, ref: ReferenceConfig, verdict: Verdict | None, pairs, outcome) -> None:  # type: ignore[no-untyped-def]
    figures = {
        "ab_n_pairs": outcome.n_pairs,
        "ab_effect_pct": outcome.effect_pct,
        "ab_ci_low_pct": outcome.ci_low_pct,
        "ab_ci_high_pct": outcome.ci_high_pct,
        "ab_p_value": outcome.p_value,
        "ab_spread_pct": outcome.spread_pct,
        "ab_decision": outcome.decision.value,
        # Verdicts are still confirmed by run-level pairs; interleaved blocks run in A/A checks (aa_checks.py).
        "ab_design": AbDesign.RUN_ABBA.value,
    }
    if verdict is None:
        _fanout_verdict_create(build, ref, pairs, outcome, figures)
        return
    for name, value in figures.items():
        setattr(verdict, name, value)
    verdict.confirm_effect_pct = outcome.effect_pct
    if outcome.decision.value == verdict.kind:
        verdict.confirmation = Confirmation.AB_CONFIRMED
        verdict.reason = f"{outcome.reason}; first run {verdict.effect_pct or 0:+.2f}%"[:300]
    else:
        verdict.confirmation = Confirmation.AB_REFUTED
        verdict.reason = (
            f"not reproduced: {outcome.reason}; first run {verdict.effect_pct or 0:+.2f}%, p={verdict.p_value or 0:.2g}"
        )[:300]
        verdict.kind = VerdictKind.NONE
    verdict.save()


def _fanout_verdict_create(build: BuildRecord, ref: ReferenceConfig, pairs, outcome, figures) -> None:  # type: ignore[no-untyped-def]
    b_run = Run.objects.filter(uuid__in=[p.b_run.run_uuid for p in pairs], status=RunStatus.FINISHED).first()
    if b_run is None or build.fanout_of is None:
        return
    origin = build.fanout_of
    change = outcome.decision in (Decision.REGRESSION, Decision.IMPROVEMENT)
    sub = build.subscription
    a_medians = [p.a_median for p in pairs if p.a_median]
    b_medians = [p.b_median for p in pairs if p.b_median]
    Verdict.objects.update_or_create(
        build=build,
        reference_config=ref,
        metric=METRIC,
        defaults={
            **figures,
            "new_run": b_run,
            "kind": outcome.decision.value if change else VerdictKind.NONE,
            "p_value": outcome.p_value,
            "effect_pct": outcome.effect_pct,
            "new_median": sorted(b_medians)[len(b_medians) // 2] if b_medians else None,
            "baseline_median": sorted(a_medians)[len(a_medians) // 2] if a_medians else None,
            "n_new": len(b_medians),
            "n_baseline": len(a_medians),
            "alpha": sub.alpha,
            "threshold_pct": sub.threshold_pct,
            "confirmation": Confirmation.AB_CONFIRMED if change else Confirmation.AB_REFUTED,
            "confirm_effect_pct": outcome.effect_pct,
            "reason": f"fan-out of verdict {origin.pk}: {outcome.reason}"[:300],
            "fanout_of": origin,
            "commit_from": pairs[0].a_commit,
            "commit_to": build.commit,
            "compare_url": compare_url(sub.repo_url, pairs[0].a_commit, build.commit),
        },
    )


def fanout_queue(*, verdict: Verdict) -> list[BuildRecord]:
    """Queue the A/B check of a confirmed regression on every other active
    subscription of its repository and branch that has not built its commit
    (idempotent: an existing build of the commit is that rig's own answer).
    Each gets the reference configs named like the verdict's, else all its
    active ones. Return the builds queued."""
    origin = verdict.build.subscription
    if verdict.fanout_of_id is not None or verdict.kind != VerdictKind.REGRESSION or not verdict.commit_from:
        return []
    others = (
        Subscription.objects.filter(repo_url=origin.repo_url, branch=origin.branch, is_active=True)
        .exclude(pk=origin.pk)
        .select_related("rig")
    )
    queued = []
    for sub in others:
        if BuildRecord.objects.filter(subscription=sub, commit=verdict.commit_to).exists():
            continue
        refs = list(sub.reference_configs.filter(is_active=True, name=verdict.reference_config.name)) or list(
            sub.reference_configs.filter(is_active=True)
        )
        if not refs:
            continue
        plan = ab_plan(sub)
        with transaction.atomic():
            build = BuildRecord.objects.create(
                subscription=sub,
                commit=verdict.commit_to,
                previous_commit=verdict.commit_from,
                fanout_of=verdict,
                accepted=False,
            )
            for ref in refs:
                ab_pairs_add(build=build, reference_config=ref, a_commit=verdict.commit_from, count=plan.first_pairs)
            _send_on_commit(build)
        queued.append(build)
    return queued

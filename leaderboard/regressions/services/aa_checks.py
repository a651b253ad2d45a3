"""A/A checks: every rig measures its own false alarms, in production.

Every ``Subscription.aa_every_days`` days, when the rig is idle (no build of
its own queued and no A/A check waiting), the service sends it an A/B
confirmation whose A and B are the same build: the rig's last good one
(``aa_checks_due``, from the nightly check). The rig runs it in the design its
memory allows (runners/builds/ab_task.py: interleaved blocks, or run-level
ABBA pairs), measures the contention of every repetition, and retries later
itself when the machine is busy; each batch comes back to ``ab_report_receive``,
which judges the blocks so far (regressions/ab_blocks.py; ab.py for the
fallback's pairs) and sends the next batch while the rule says continue. Any
change the rule calls is a false alarm (selectors_aa.py counts them).

Each settled check is also the rig's **power check**: the same judged blocks,
B's every rate cut by ``PLANTED_SLOWDOWN_PCT``, judged by the same rule. A
slowdown planted in the rig's own measured noise, not in a binary (that is
benchmarks/ab_slowdowns.py's compute commits): whether the rule would have
caught it, missed it, or needed more blocks than the check ran."""

from __future__ import annotations

import logging
import statistics
import uuid
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone
from pydantic import ValidationError

from leaderboard.celery import app as celery_app
from leaderboard.core.queues import rig_task_send
from leaderboard.regressions.ab import AbOutcome, Decision, Pair, Plan, ab_judge
from leaderboard.regressions.ab_blocks import (
    Block,
    block_plan,
    blocks_judge,
    judged_blocks,
    planted_slowdown,
    worst_contention,
)
from leaderboard.regressions.models import (
    AaCheck,
    BuildRecord,
    BuildStatus,
    Subscription,
)
from leaderboard.regressions.selectors_aa import subscription_block_sizing
from leaderboard.regressions.services.ab_confirmation import ab_plan
from leaderboard.regressions.states import BENCHMARKED_PHASES, CONFIRMING, AaStatus, aa_check_move
from runners.ab_design import DEFAULT_REPS_PER_SIDE, AbDesign, ContentionCall, Side
from runners.builds.releases import release_number
from runners.delivery.ab_schema import AbDispatch, AbReport
from runners.delivery.schema_types import field_errors

logger = logging.getLogger(__name__)

# Registered by the rig's worker (runners/builds/ab_task.py); the service only names it.
AB_RIG_TASK = "rigboard.ab_blocks"
# The service-side task the rig sends each batch's report to (tasks.py).
AB_REPORT_TASK = "regressions.ab_report"
AA_PREFIX = "aa-"
# The power check: a slowdown this size planted in the settled check's B rates
# (the ">= 95% caught at 5%"), judged by the rig's own rule.
PLANTED_SLOWDOWN_PCT = 5.0


def _settle(check: AaCheck, status: AaStatus, reason: str) -> None:
    """Move ``check`` to a final ``status`` (states.aa_check_move) with why, and save."""
    aa_check_move(check, status)
    check.reason = reason[:300]
    check.settled_at = timezone.now()
    check.save()


def aa_check_spec(check: AaCheck, *, first_index: int, count: int) -> dict[str, Any]:
    """Return the JSON the rig's A/B task receives for one batch of ``check``
    (runners/delivery/ab_schema.py's AbDispatch)."""
    sub = check.subscription
    return AbDispatch.model_validate(
        {
            "confirmation_id": f"{AA_PREFIX}{check.pk}",
            "repo_url": sub.repo_url,
            "source": sub.release_source if release_number(check.commit) is not None else "git",
            "flags": sub.build_flags,
            "jobs": sub.build_jobs,
            "a_commit": check.commit,
            "b_commit": check.commit,
            "config": check.reference_config.spec,
            "first_index": first_index,
            "count": count,
            "reps_per_side": DEFAULT_REPS_PER_SIDE,
            "report_task": AB_REPORT_TASK,
            "report_queue": celery_app.conf.task_default_queue or "celery",
        }
    ).as_message()


def _send(check_id: int, first_index: int, count: int) -> None:
    check = AaCheck.objects.select_related("subscription__rig", "reference_config").get(pk=check_id)
    check.celery_task_id = str(uuid.uuid4())
    check.save(update_fields=["celery_task_id"])
    try:
        rig_task_send(
            task_name=AB_RIG_TASK,
            spec=aa_check_spec(check, first_index=first_index, count=count),
            queue=check.subscription.rig.queue_name,
            task_id=check.celery_task_id,
            time_limit=None,
        )
    except Exception as exc:  # any broker error: the check never left, and says why
        logger.exception("could not queue A/A check %s", check_id)
        _settle(check, AaStatus.FAILED, f"could not reach the Celery broker: {exc}")


def rig_is_idle(subscription: Subscription) -> bool:
    """Return True if none of the rig's subscriptions has a build queued or an A/A check waiting."""
    rig = subscription.rig_id
    waiting = [BuildStatus.QUEUED, *CONFIRMING]  # the rig still owes these builds runs
    busy_build = BuildRecord.objects.filter(subscription__rig_id=rig, status__in=waiting).exists()
    return not busy_build and not AaCheck.objects.filter(subscription__rig_id=rig, status=AaStatus.QUEUED).exists()


def aa_check_queue(*, subscription: Subscription) -> AaCheck | None:
    """Queue an A/A check of the subscription's last good build on its first
    active reference config (sent once committed); None when it has neither."""
    commit = (
        BuildRecord.objects.filter(subscription=subscription, status__in=BENCHMARKED_PHASES, fanout_of=None)
        .order_by("-created_at", "-id")
        .values_list("commit", flat=True)
        .first()
    )
    ref = subscription.reference_configs.filter(is_active=True).order_by("id").first()
    if not commit or ref is None:
        return None
    limit = subscription_block_sizing(subscription).limit
    plan = subscription_block_plan(subscription, max_blocks=limit)
    with transaction.atomic():
        check = AaCheck.objects.create(
            subscription=subscription, reference_config=ref, commit=commit, ab_block_limit=limit
        )
        transaction.on_commit(lambda: _send(check.pk, 0, plan.first_pairs))
    return check


def aa_checks_due(*, now: datetime | None = None) -> list[AaCheck]:
    """Queue an A/A check on every active subscription whose last one is
    ``aa_every_days`` old or more (or that never had one) and whose rig is
    idle; return the checks queued."""
    now = now or timezone.now()
    queued = []
    for sub in Subscription.objects.filter(is_active=True, aa_every_days__gt=0).select_related("rig"):
        last = sub.aa_checks.order_by("-created_at").values_list("created_at", flat=True).first()
        if last is not None and now - last < timedelta(days=sub.aa_every_days):
            continue
        if not rig_is_idle(sub):
            continue
        check = aa_check_queue(subscription=sub)
        if check is not None:
            queued.append(check)
    return queued


def subscription_block_plan(subscription: Subscription, *, max_blocks: int = 0) -> Plan:
    """Return the blocks' sequential plan the subscription's settings give: its
    level and threshold, at most ``max_blocks`` blocks (the limit fixed when the
    confirmation began, sized on the rig's noise; 0: ``ab_max_pairs``). An A/A
    check is judged as the rig's verdicts are."""
    return block_plan(
        alpha=subscription.alpha,
        threshold_pct=subscription.threshold_pct,
        max_blocks=max_blocks or subscription.ab_max_pairs,
    )


def blocks_decide(
    design: str, blocks: Sequence[Mapping[str, Any]], subscription: Subscription, *, max_blocks: int = 0
) -> tuple[AbOutcome, Plan]:
    """Judge reported blocks by the rule of the design they ran in (A/A checks
    and verdicts alike); interleaved blocks up to ``max_blocks`` (0: the
    subscription's ``ab_max_pairs``), the fallback's pairs up to ``ab_max_pairs``."""
    if design == AbDesign.INTERLEAVED:
        plan = subscription_block_plan(subscription, max_blocks=max_blocks)
        parsed = [Block(tuple(Side(s) for s in b["sides"]), tuple(b["decode_tokens_per_s"])) for b in blocks]
        return blocks_judge(parsed, plan), plan
    plan = ab_plan(subscription)
    pairs = []
    for b in blocks:  # the fallback's pairs: one run of each build, not alternated
        sides = [Side(s) for s in b["sides"]]
        a = [v for s, v in zip(sides, b["decode_tokens_per_s"], strict=True) if s == Side.A and v]
        bb = [v for s, v in zip(sides, b["decode_tokens_per_s"], strict=True) if s == Side.B and v]
        pairs.append(Pair(statistics.median(a) if a else 0.0, statistics.median(bb) if bb else 0.0, sides[0] == Side.A))
    return ab_judge(pairs, plan), plan


def inconclusive_words(outcome: AbOutcome, subscription: Subscription) -> str:
    """Return, for an answer left inconclusive at its limit, what the rig can
    resolve (from its A/A noise now), as "; …" to append; '' otherwise."""
    if outcome.decision != Decision.INCONCLUSIVE:
        return ""
    words = subscription_block_sizing(subscription).reason_words()
    return f"; {words}" if words else ""


def ab_report_parse(ident: str, report: Mapping[str, Any]) -> AbReport:
    """Return the rig's report as the schema reads it; one that does not fit is
    an error report naming the field (nothing of it is judged)."""
    try:
        return AbReport.model_validate(dict(report))
    except ValidationError as exc:
        field, (why, *_) = next(iter(field_errors(exc).items()))
        return AbReport(confirmation_id=ident, status="error", error=f"the rig's report: {field}: {why}")


def ab_report_receive(*, report: Mapping[str, Any]) -> AaCheck | None:
    """Record one batch's report of an A/A check and judge it; send the next
    batch while the rule says continue. A report for no known check, or for a
    check no longer queued (a duplicate delivery), changes nothing: None."""
    ident = str(report.get("confirmation_id") or "") if isinstance(report, Mapping) else ""
    if not ident.startswith(AA_PREFIX) or not ident[len(AA_PREFIX) :].isdigit():
        logger.warning("A/B report for an unknown confirmation %r", ident)
        return None
    parsed = ab_report_parse(ident, report)
    with transaction.atomic():
        check = (
            AaCheck.objects.select_for_update()
            .select_related("subscription", "reference_config")
            .filter(pk=int(ident[len(AA_PREFIX) :]))
            .first()
        )
        if check is None or check.status != AaStatus.QUEUED:
            return None
        check.blocks = [*check.blocks, *(b.model_dump(mode="json") for b in parsed.blocks)]
        check.design = parsed.design or check.design
        if parsed.status == "error":
            _settle(check, AaStatus.FAILED, parsed.error or "the rig reported an error")
            return check
        if parsed.status == "held_back":
            _settle(check, AaStatus.HELD_BACK, "held back: the rig was busy (heavy contention) each try")
            return check
        judged = judged_blocks(check.blocks)
        outcome, plan = blocks_decide(check.design, judged, check.subscription, max_blocks=check.ab_block_limit)
        check.contention = worst_contention(judged)
        if outcome.decision == Decision.CONTINUE:
            check.save()
            first, count = len(judged), plan.next_batch(len(judged))
            transaction.on_commit(lambda: _send(check.pk, first, count))
            return check
        check.decision = outcome.decision.value
        check.n_blocks = outcome.n_pairs
        planted_blocks = planted_slowdown(judged, PLANTED_SLOWDOWN_PCT)
        planted, _ = blocks_decide(check.design, planted_blocks, check.subscription, max_blocks=check.ab_block_limit)
        check.power_planted_pct, check.power_decision = PLANTED_SLOWDOWN_PCT, planted.decision.value
        check.effect_pct, check.p_value = outcome.effect_pct, outcome.p_value
        check.ci_low_pct, check.ci_high_pct = outcome.ci_low_pct, outcome.ci_high_pct
        uneven = "; A and B ran under different contention" if check.contention == ContentionCall.UNEVEN else ""
        _settle(check, AaStatus.SETTLED, f"{outcome.reason}{uneven}{inconclusive_words(outcome, check.subscription)}")
        return check

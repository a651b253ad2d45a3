"""A/B blocks: how a nightly verdict is confirmed by default (``confirm_mode`` blocks).

A change verdict is *pending* while its rig runs blocks of the baseline build
(A, the verdict's ``commit_from``) and the candidate (B, the build's commit)
with the rig's A/B task (runners/builds/ab_task.py, the one A/A checks use):
where two servers fit in the rig's memory it starts both side by side and
alternates their repetitions A B B A … within each block, fresh processes
every block; where they do not, it runs run-level ABBA pairs. Either way it
measures what else used the machine during every repetition and holds a busy
batch back itself, retrying later.

Each batch comes back as a report, kept raw on the verdict
(``Verdict.ab_blocks``) and judged by the rule of the design that ran
(aa_checks.blocks_decide: regressions/ab_blocks.py, or ab.py for pairs). While
the rule says continue, the next batch is asked for; else the verdict is
answered as a run-level A/B answer is (ab_confirmation.ab_answer_apply:
confirmed, or refuted). A batch the rig could not measure (held back by
contention on every try, a build error) leaves the verdict unchecked: the
first run stands, and says why.

This module records and judges; services/confirmation.py sends the batches,
moves the build on once no verdict waits and acts on what stands."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.db.models import F
from django.db.models.functions import Coalesce

from leaderboard.celery import app as celery_app
from leaderboard.regressions.ab import Decision
from leaderboard.regressions.ab_blocks import judged_blocks, worst_contention
from leaderboard.regressions.models import BuildRecord, Verdict
from leaderboard.regressions.selectors_aa import subscription_block_sizing
from leaderboard.regressions.services.aa_checks import (
    AB_REPORT_TASK,
    blocks_decide,
    inconclusive_words,
    subscription_block_plan,
)
from leaderboard.regressions.services.ab_confirmation import ab_answer_apply
from leaderboard.regressions.states import Confirmation, confirmation_move
from runners.ab_design import DEFAULT_REPS_PER_SIDE, ContentionCall
from runners.builds.releases import ReleaseSource, release_number
from runners.delivery.ab_schema import AbDispatch, AbReport

VERDICT_PREFIX = "vb-"


@dataclass(frozen=True)
class BatchAsk:
    """A batch of blocks the service asks the rig for: ``count`` blocks from ``first_index``."""

    verdict_id: int
    first_index: int
    count: int


def verdict_blocks_spec(verdict: Verdict, *, first_index: int, count: int) -> dict[str, Any]:
    """Return the JSON the rig's A/B task receives for one batch confirming
    ``verdict`` (runners/delivery/ab_schema.py's AbDispatch)."""
    sub = verdict.build.subscription
    source = sub.release_source if release_number(verdict.commit_to) is not None else ReleaseSource.GIT
    return AbDispatch.model_validate(
        {
            "confirmation_id": f"{VERDICT_PREFIX}{verdict.pk}",
            "repo_url": sub.repo_url,
            "source": source,
            "flags": sub.build_flags,
            "jobs": sub.build_jobs,
            "a_commit": verdict.commit_from,
            "b_commit": verdict.commit_to,
            "config": verdict.reference_config.spec,
            "first_index": first_index,
            "count": count,
            "reps_per_side": DEFAULT_REPS_PER_SIDE,
            "report_task": AB_REPORT_TASK,
            "report_queue": celery_app.conf.task_default_queue or "celery",
        }
    ).as_message()


def verdict_blocks_queue(*, verdicts: Sequence[Verdict]) -> list[BatchAsk]:
    """Hold each verdict with a baseline commit pending (the caller chose
    them: changes, and no-change verdicts where every step is screened) and
    return the first batch to ask its rig for (the caller sends them once committed)."""
    asks = []
    for verdict in verdicts:
        if not verdict.commit_from:
            continue
        sub = verdict.build.subscription
        verdict.ab_block_limit = subscription_block_sizing(sub).limit
        plan = subscription_block_plan(sub, max_blocks=verdict.ab_block_limit)
        confirmation_move(verdict, Confirmation.PENDING)
        verdict.ab_blocks = []
        verdict.save(update_fields=["confirmation", "ab_blocks", "ab_block_limit"])
        asks.append(BatchAsk(verdict.pk, 0, plan.first_pairs))
    return asks


def verdict_unmeasured(verdict: Verdict, why: str) -> None:
    """Settle a pending verdict whose blocks could not be measured: unchecked,
    the first run stands, ``why`` in its reason. Saved."""
    confirmation_move(verdict, Confirmation.UNCHECKED)
    verdict.reason_add(f"{why}; the first run stands")
    verdict.save(update_fields=["confirmation", "reason", "ab_blocks", "ab_design", "ab_contention"])


def verdict_blocks_record(verdict: Verdict, report: AbReport) -> BatchAsk | None:
    """Keep one batch's report on the pending ``verdict`` (locked by the caller)
    and judge all its blocks so far: return the next batch to ask for while the
    rule says continue, else None with the verdict answered (saved)."""
    verdict.ab_blocks = [*verdict.ab_blocks, *(b.model_dump(mode="json") for b in report.blocks)]
    if report.wall_s:  # the build's benchmark time counts its confirmation's, as its pairs' runs do
        total = Coalesce(F("bench_time_s"), 0.0) + report.wall_s
        BuildRecord.objects.filter(pk=verdict.build_id).update(bench_time_s=total)
    verdict.ab_design = report.design or verdict.ab_design
    if report.status == "error":
        verdict_unmeasured(verdict, f"A/B blocks failed: {report.error or 'the rig reported an error'}"[:150])
        return None
    if report.status == "held_back":
        verdict_unmeasured(verdict, "A/B blocks held back: the rig was busy (heavy contention) each try")
        return None
    if report.blocks and all(b.error for b in report.blocks):  # asking again would fail the same way
        verdict_unmeasured(verdict, f"A/B blocks failed: every block of the batch did ({report.blocks[0].error})"[:150])
        return None
    sub = verdict.build.subscription
    judged = judged_blocks(verdict.ab_blocks)
    outcome, plan = blocks_decide(verdict.ab_design, judged, sub, max_blocks=verdict.ab_block_limit)
    verdict.ab_contention = worst_contention(judged)
    if outcome.decision == Decision.CONTINUE:
        verdict.save(update_fields=["ab_blocks", "ab_design", "ab_contention"])
        return BatchAsk(verdict.pk, len(judged), plan.next_batch(len(judged)))
    ab_answer_apply(verdict, outcome, design=verdict.ab_design)
    if words := inconclusive_words(outcome, sub):
        verdict.reason_add(words[2:])
        verdict.save(update_fields=["reason"])
    if verdict.ab_contention == ContentionCall.UNEVEN:
        verdict.reason_add("A and B ran under different contention")
        verdict.save(update_fields=["reason"])
    return None

"""Reads of the A/A checks (models_aa.py): per rig, how many called a change,
the one-sided 95% bounds of that rate, the design last used, whether the
rig's false alarms exceed the level its verdicts claim, and the block noise its
interleaved checks measured, with the block limit that noise sizes
(regressions/ab_power.py)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import datetime

from django.db.models import F, Window
from django.db.models.functions import RowNumber

from leaderboard.regressions.ab_blocks import Block, judged_blocks
from leaderboard.regressions.ab_power import BlockNoise, BlockSizing, pooled_block_noise, size_blocks
from leaderboard.regressions.models import AaCheck, AaStatus, Subscription
from leaderboard.regressions.verdict import DEFAULT_ALPHA
from runners.ab_design import AbDesign, Side
from runners.stats import rate_bounds_95

# The rig's block noise is pooled over its last this many settled interleaved A/A checks.
NOISE_CHECKS = 20

# What a verdict on a rig whose own A/A checks call changes too often is marked
# with, on the matrix and in the report.
AA_OVER_LEVEL = "this rig's A/A checks call changes above the level: weigh with care"


@dataclass(frozen=True)
class RigAaSummary:
    """A rig's A/A checks: ``checks`` settled, ``called`` of them called a change
    (false alarms), the rate's one-sided 95% bounds, the level (the rig's
    subscriptions' alpha, the strictest), ``held_back`` checks the rig was too busy
    for, the design and time of the last settled check."""

    rig_id: int
    checks: int
    called: int
    lower_95: float
    upper_95: float
    level: float
    held_back: int
    design: str
    last_at: datetime | None
    power_planted_pct: float | None = None
    power_decision: str = ""
    power_n_blocks: int = 0
    sizing: BlockSizing | None = None

    def power_words(self) -> str:
        """Return the last power check in words ('' without one)."""
        if self.power_planted_pct is None or not self.power_decision:
            return ""
        planted = f"a {self.power_planted_pct:g}% slowdown planted in the B rates of its last A/A check"
        if self.power_decision == "regression":
            return f"last power check: {planted} was caught ({self.power_n_blocks} blocks)"
        if self.power_decision == "continue":
            return f"last power check: {planted} was undecided in the {self.power_n_blocks} blocks measured"
        return f"last power check: {planted} was missed ({self.power_decision})"

    @property
    def exceeds_level(self) -> bool:
        """True when the false alarms are beyond the level with 95% confidence
        (the rate's lower bound above it): the rig's verdicts are marked."""
        return self.called > 0 and self.lower_95 > self.level

    def describe(self) -> str:
        if not self.checks:
            return "no A/A check settled yet"
        text = (
            f"A/A: {self.called} of {self.checks} called a change (95% bound {100 * self.upper_95:.1f}%; "
            f"level {100 * self.level:g}%), last by {self.design or 'unknown design'}"
        )
        power = self.power_words()
        text += f"; {power}" if power else ""
        sizing = self.sizing.words() if self.sizing else ""
        text += f"; {sizing}" if sizing else ""
        return text + ("; false alarms above the level" if self.exceeds_level else "")


def rigs_aa_summaries(*, rig_ids: Iterable[int]) -> dict[int, RigAaSummary]:
    """Return each rig's A/A summary (rigs with no check get one with zero checks), in two queries."""
    ids = list(set(rig_ids))
    checks = (
        AaCheck.objects.filter(subscription__rig_id__in=ids, status__in=[AaStatus.SETTLED, AaStatus.HELD_BACK])
        .order_by("settled_at", "id")
        .values_list(
            "subscription__rig_id",
            "status",
            "decision",
            "design",
            "settled_at",
            "power_planted_pct",
            "power_decision",
            "n_blocks",
        )
    )
    strictest: dict[int, Subscription] = {}
    for sub in Subscription.objects.filter(rig_id__in=ids).order_by("id"):
        if sub.rig_id not in strictest or sub.alpha < strictest[sub.rig_id].alpha:
            strictest[sub.rig_id] = sub
    tallies: dict[int, list[AaTally]] = {i: [] for i in ids}
    for rig_id, status, decision, design, settled_at, planted_pct, power_decision, n_blocks in checks:
        tallies[rig_id].append(AaTally(status, decision, design, settled_at, planted_pct, power_decision, n_blocks))
    noises = rigs_block_noise(rig_ids=ids)
    out = {}
    for i in ids:
        strict = strictest.get(i)
        summary = _summary(i, tallies[i], strict.alpha if strict else DEFAULT_ALPHA)
        sizing = subscription_sizing(strict, noises.get(i)) if strict else None
        out[i] = replace(summary, sizing=sizing)
    return out


def block_figures(blocks: list[dict]) -> list[float]:
    """Return the figure (ln(B/A)) of each judged block of a check's reported ``blocks``."""
    parsed = (Block(tuple(Side(s) for s in b["sides"]), tuple(b["decode_tokens_per_s"])) for b in judged_blocks(blocks))
    return [c for b in parsed if (c := b.contrast()) is not None]


def rigs_block_noise(*, rig_ids: Iterable[int]) -> dict[int, BlockNoise]:
    """Return each rig's block noise, pooled over its last ``NOISE_CHECKS``
    settled interleaved A/A checks (rigs without any left out), in one query:
    a window numbers each rig's checks, newest first, so a rig with a year of
    checks reads its last ``NOISE_CHECKS``, not all of them."""
    newest_first = [F("settled_at").desc(), F("id").desc()]
    rows = (
        AaCheck.objects.filter(
            status=AaStatus.SETTLED, design=AbDesign.INTERLEAVED, subscription__rig_id__in=list(rig_ids)
        )
        .annotate(recency=Window(RowNumber(), partition_by=F("subscription__rig_id"), order_by=newest_first))
        .filter(recency__lte=NOISE_CHECKS)
        .order_by(*newest_first)
        .values_list("subscription__rig_id", "blocks")
    )
    figures: dict[int, list[list[float]]] = {}
    for rig_id, blocks in rows:
        figures.setdefault(rig_id, []).append(block_figures(blocks))
    return {i: noise for i, checks in figures.items() if (noise := pooled_block_noise(checks)) is not None}


def subscription_sizing(subscription: Subscription, noise: BlockNoise | None) -> BlockSizing:
    """Return the block limit the subscription's settings give on a rig of this ``noise``."""
    return size_blocks(
        noise,
        alpha=subscription.alpha,
        threshold_pct=subscription.threshold_pct,
        resolve_pct=subscription.resolve_pct,
        floor_blocks=subscription.ab_max_pairs,
    )


def subscription_block_sizing(subscription: Subscription) -> BlockSizing:
    """Return the block limit for the subscription's next confirmation, sized on its rig's A/A noise now."""
    rig_id = subscription.rig_id
    return subscription_sizing(subscription, rigs_block_noise(rig_ids=[rig_id]).get(rig_id))


@dataclass(frozen=True)
class AaTally:
    status: str
    decision: str
    design: str
    settled_at: datetime | None
    power_planted_pct: float | None
    power_decision: str
    n_blocks: int


def _summary(rig_id: int, rows: list[AaTally], level: float) -> RigAaSummary:
    settled = [r for r in rows if r.status == AaStatus.SETTLED]
    called = sum(1 for r in settled if r.decision in ("regression", "improvement"))
    lower, upper = rate_bounds_95(called, len(settled))
    last = settled[-1] if settled else None
    return RigAaSummary(
        rig_id=rig_id,
        checks=len(settled),
        called=called,
        lower_95=lower,
        upper_95=upper,
        level=level,
        held_back=sum(1 for r in rows if r.status == AaStatus.HELD_BACK),
        design=last.design if last else "",
        last_at=last.settled_at if last else None,
        power_planted_pct=last.power_planted_pct if last else None,
        power_decision=last.power_decision if last else "",
        power_n_blocks=last.n_blocks if last else 0,
    )

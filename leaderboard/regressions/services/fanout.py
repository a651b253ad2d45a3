"""Fan-out: a regression confirmed by A/B pairs on one rig is checked, by the
same A/B pairs, on every other active rig following the same repository and
branch (services/ab_confirmation.py judges the pairs; the answer is a
verdict ``fanout_of`` the first, shown on the regression's report)."""

from __future__ import annotations

from django.db import transaction

from leaderboard.regressions.models import BuildRecord, Subscription, Verdict, VerdictKind
from leaderboard.regressions.services.ab_confirmation import ab_pairs_add, ab_plan


def fanout_builds_add(*, verdict: Verdict) -> list[BuildRecord]:
    """Add the A/B check of a confirmed regression on every other active
    subscription of its repository and branch that has not built its commit
    (idempotent: an existing build of the commit is that rig's own answer).
    Each gets the reference configs named like the verdict's, else all its
    active ones. Return the builds added (queued; the caller sends them)."""
    origin = verdict.build.subscription
    if verdict.fanout_of_id is not None or verdict.kind != VerdictKind.REGRESSION or not verdict.commit_from:
        return []
    others = (
        Subscription.objects.filter(repo_url=origin.repo_url, branch=origin.branch, is_active=True)
        .exclude(pk=origin.pk)
        .select_related("rig")
    )
    added = []
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
        added.append(build)
    return added

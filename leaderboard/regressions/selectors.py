"""Reads for nightly regression: the subscription list and the timeline of
one rig + reference configuration (one row per build, oldest first)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from django.db.models import QuerySet
from django.shortcuts import get_object_or_404

from leaderboard.regressions.models import BuildRecord, BuildRun, BuildStatus, ReferenceConfig, Subscription, Verdict
from leaderboard.results.models import Run


@dataclass(frozen=True)
class TimelinePoint:
    """One build on the timeline. Figures are None when the build failed or its
    run has not arrived (the chart shows a gap)."""

    build_id: int
    commit: str
    status: str
    status_label: str
    created_at: dt.datetime
    build_time_s: float | None
    run_id: int | None
    decode_tokens_per_s_mean: float | None
    decode_tokens_per_s_ci95_low: float | None
    decode_tokens_per_s_ci95_high: float | None
    prefill_tokens_per_s_mean: float | None
    ttft_ms_mean: float | None
    power_w_mean: float | None
    verdict_kind: str
    effect_pct: float | None
    p_value: float | None
    compare_url: str
    first_bad_commit: str

    @property
    def short_commit(self) -> str:
        return self.commit[:10]

    @property
    def failed(self) -> bool:
        return self.status in (BuildStatus.FAILED, BuildStatus.ERROR)


@dataclass(frozen=True)
class Timeline:
    subscription: Subscription
    reference: ReferenceConfig
    points: list[TimelinePoint]


def subscriptions_list() -> QuerySet[Subscription]:
    """Return subscriptions with their rig and reference configs prefetched."""
    return Subscription.objects.select_related("rig").prefetch_related("reference_configs").order_by("rig__name", "id")


def timeline_get(*, subscription_id: int, reference_id: int) -> Timeline:
    """Return the timeline of one reference config (bisection builds left out:
    they appear through their verdict's first bad commit). Raise Http404 for an
    unknown subscription or a reference config of another subscription."""
    sub = get_object_or_404(Subscription.objects.select_related("rig"), pk=subscription_id)
    reference = get_object_or_404(ReferenceConfig, pk=reference_id, subscription=sub)
    builds = list(BuildRecord.objects.filter(subscription=sub, bisect_of__isnull=True).order_by("created_at", "id"))
    run_uuids = dict(
        BuildRun.objects.filter(build__in=builds, reference_config=reference).values_list("build_id", "run_uuid")
    )
    runs = {r.uuid: r for r in Run.objects.filter(uuid__in=run_uuids.values())}
    verdicts = {v.build_id: v for v in Verdict.objects.filter(build__in=builds, reference_config=reference)}
    points = []
    for build in builds:
        run = runs.get(run_uuids[build.pk]) if build.pk in run_uuids else None
        verdict = verdicts.get(build.pk)
        points.append(
            TimelinePoint(
                build_id=build.pk,
                commit=build.commit,
                status=build.status,
                status_label=build.get_status_display(),
                created_at=build.created_at,
                build_time_s=build.build_time_s,
                run_id=run.pk if run else None,
                decode_tokens_per_s_mean=run.decode_tokens_per_s_mean if run else None,
                decode_tokens_per_s_ci95_low=run.decode_tokens_per_s_ci95_low if run else None,
                decode_tokens_per_s_ci95_high=run.decode_tokens_per_s_ci95_high if run else None,
                prefill_tokens_per_s_mean=run.prefill_tokens_per_s_mean if run else None,
                ttft_ms_mean=run.ttft_ms_mean if run else None,
                power_w_mean=run.power_w_mean if run else None,
                verdict_kind=verdict.kind if verdict else "",
                effect_pct=verdict.effect_pct if verdict else None,
                p_value=verdict.p_value if verdict else None,
                compare_url=verdict.compare_url if verdict else "",
                first_bad_commit=verdict.first_bad_commit if verdict else "",
            )
        )
    return Timeline(subscription=sub, reference=reference, points=points)

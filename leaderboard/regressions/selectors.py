"""Reads for nightly regression: the subscription list, the timeline of one
rig + reference configuration (one row per build, oldest first), and the
timeline links the leaderboard and rig pages show (one query each)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from django.db import connection
from django.db.models import F, OuterRef, Q, QuerySet, Subquery
from django.shortcuts import get_object_or_404
from django.urls import reverse

from leaderboard.regressions.models import (
    BuildRecord,
    BuildRun,
    BuildStatus,
    ReferenceConfig,
    Subscription,
    Verdict,
    VerdictKind,
)
from leaderboard.regressions.selectors_aa import RigAaSummary, rigs_aa_summaries
from leaderboard.regressions.states import BuildRunRole
from leaderboard.regressions.words import verdict_words
from leaderboard.results.models import Run
from leaderboard.results.speedups.compiled import AnyOf, compiled_once
from runners import stats
from runners.builds.releases import release_number, release_url
from runners.portable import portable_text


@dataclass(frozen=True)
class TimelinePoint:
    """One build on the timeline. Figures are None when the build failed or its
    run has not arrived (the chart shows a gap). Its decode figures are the ones
    the verdicts compare (``Run.build_decode_samples``: the client's), not the
    run's stored summary (the server's figure, whose definition changed at b10423)."""

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
    confirmation: str
    confirmation_label: str
    # How the verdict stands, in the words every page uses (words.py).
    confirmation_words: str
    effect_pct: float | None
    p_value: float | None
    noise_floor_label: str
    verdict_reason: str
    compare_url: str
    first_bad_commit: str
    bisect_label: str
    # The verdict's id: a regression's report page (regressions:report) is its.
    verdict_id: int | None = None
    # A regression judged against the same held baseline as an earlier one on this
    # timeline (``held_regressions``): that baseline and the build whose regression
    # began the hold; else None and ''.
    regressed_since_build_id: int | None = None
    regressed_since_commit: str = ""
    held_baseline_commit: str = ""

    @property
    def short_commit(self) -> str:
        return self.commit[:10]

    @property
    def release_url(self) -> str:
        """Return the release's page upstream when this commit is a release (bN); else ''."""
        number = release_number(self.commit)
        return release_url(number) if number is not None else ""

    @property
    def failed(self) -> bool:
        return self.status in (BuildStatus.FAILED, BuildStatus.ERROR)


@dataclass(frozen=True)
class Timeline:
    subscription: Subscription
    reference: ReferenceConfig
    points: list[TimelinePoint]


def _floor_label(verdict: Verdict | None) -> str:
    """Return the noise floor a verdict was judged with, as the slowdown and
    speedup it lets through ("-11.8% / +13.3%"); "unknown" without a floor."""
    if verdict is None:
        return ""
    bounds = verdict.noise.bounds_pct()
    return "unknown" if bounds is None else f"{bounds[0]:+.1f}% / {bounds[1]:+.1f}%"


def held_regressions(builds: list[BuildRecord], verdicts: dict[int, Verdict]) -> dict[int, BuildRecord]:
    """Return, for each build (by id) whose standing regression is the one an earlier
    build began, that earlier build: a called regression holds the baseline
    (verdicts.py: a regressed build is not accepted), so every build after it is
    judged against the same last good build and reads "regression" again until the
    speed comes back: not a new regression against its predecessor, though it may be a
    larger one (its effect says). ``builds`` oldest first."""
    began: dict[int, BuildRecord] = {}  # held baseline build id -> the first build regressed against it
    held: dict[int, BuildRecord] = {}
    for build in builds:
        verdict = verdicts.get(build.pk)
        if verdict is None or verdict.kind != VerdictKind.REGRESSION or not verdict.stands:
            continue
        if verdict.baseline_build_id is None:
            continue
        first = began.setdefault(verdict.baseline_build_id, build)
        if first.pk != build.pk:
            held[build.pk] = first
    return held


def subscriptions_list() -> QuerySet[Subscription]:
    """Return the public rigs' subscriptions with their rig and reference configs prefetched."""
    subscriptions = Subscription.objects.public().select_related("rig").prefetch_related("reference_configs")
    return subscriptions.order_by("rig__name", "id")


def timeline_get(*, subscription_id: int, reference_id: int, viewer: Any = None) -> Timeline:
    """Return the timeline of one reference config (bisection builds left out:
    they appear through their verdict's first bad commit). Raise Http404 for an
    unknown subscription, one of a rig hidden from ``viewer`` (None: the public),
    or a reference config of another subscription."""
    sub = get_object_or_404(Subscription.objects.visible_to(viewer).select_related("rig"), pk=subscription_id)
    reference = get_object_or_404(ReferenceConfig, pk=reference_id, subscription=sub)
    builds = list(BuildRecord.objects.filter(subscription=sub, bisect_of__isnull=True).order_by("created_at", "id"))
    run_uuids = dict(
        BuildRun.objects.filter(build__in=builds, reference_config=reference, role=BuildRunRole.JUDGED).values_list(
            "build_id", "run_uuid"
        )
    )
    runs = {r.uuid: r for r in Run.objects.filter(uuid__in=run_uuids.values()).prefetch_related("samples")}
    verdicts = {
        v.build_id: v
        for v in Verdict.objects.filter(build__in=builds, reference_config=reference).select_related("baseline_build")
    }
    held = held_regressions(builds, verdicts)
    points = []
    for build in builds:
        run = runs.get(run_uuids[build.pk]) if build.pk in run_uuids else None
        verdict = verdicts.get(build.pk)
        since = held.get(build.pk)
        held_baseline = verdict.baseline_build if since and verdict else None
        decode = stats.summarize(run.build_decode_samples()) if run else None
        points.append(
            TimelinePoint(
                build_id=build.pk,
                commit=build.commit,
                status=build.status,
                status_label=build.get_status_display(),
                created_at=build.created_at,
                build_time_s=build.build_time_s,
                run_id=run.pk if run else None,
                decode_tokens_per_s_mean=decode.mean if decode else None,
                decode_tokens_per_s_ci95_low=decode.ci95_low if decode else None,
                decode_tokens_per_s_ci95_high=decode.ci95_high if decode else None,
                prefill_tokens_per_s_mean=run.prefill_tokens_per_s_mean if run else None,
                ttft_ms_mean=run.ttft_ms_mean if run else None,
                power_w_mean=run.power_w_mean if run else None,
                verdict_kind=verdict.kind if verdict else "",
                confirmation=verdict.confirmation if verdict else "",
                confirmation_label=verdict.get_confirmation_display() if verdict and verdict.confirmation else "",
                confirmation_words=verdict_words(verdict).standing if verdict else "",
                effect_pct=verdict.effect_shown_pct if verdict else None,
                p_value=verdict.p_shown if verdict else None,
                noise_floor_label=_floor_label(verdict),
                verdict_reason=verdict.reason if verdict else "",
                compare_url=verdict.compare_url if verdict else "",
                first_bad_commit=verdict.first_bad_commit if verdict else "",
                bisect_label=verdict.get_bisect_status_display() if verdict and verdict.bisect_status else "",
                verdict_id=verdict.pk if verdict else None,
                regressed_since_build_id=since.pk if since else None,
                regressed_since_commit=since.commit if since else "",
                held_baseline_commit=held_baseline.commit if held_baseline else "",
            )
        )
    return Timeline(subscription=sub, reference=reference, points=points)


@dataclass(frozen=True)
class TimelineLink:
    """Where a timeline lives: its subscription and reference config ids."""

    subscription_id: int
    reference_id: int
    label: str

    @property
    def url(self) -> str:
        return reverse("regressions:timeline", args=[self.subscription_id, self.reference_id])


def timeline_links_for_rig(*, rig_id: int) -> list[TimelineLink]:
    """Return one link per reference config of the rig's subscriptions (active
    or not: a retired one still has its history), in one query."""
    refs = (
        ReferenceConfig.objects.filter(subscription__rig_id=rig_id)
        .select_related("subscription")
        .order_by("subscription__repo_url", "subscription__branch", "subscription_id", "name", "id")
    )
    return [
        TimelineLink(
            r.subscription_id, r.pk, f"{r.name} · {portable_text(r.subscription.repo_url)} @ {r.subscription.branch}"
        )
        for r in refs
    ]


def timeline_links_for_runs(*, run_ids: list[int]) -> dict[int, TimelineLink]:
    """Return the timeline of each of these runs that a nightly build made,
    keyed by run id, in one query (runs of no build are left out). On PostgreSQL the
    query is compiled once per connection (results/speedups/compiled.py: ~1.3 ms of
    every board page's CPU, 3.4 of the GPU page's, built per request before);
    ``timeline_links_for_runs_orm`` is its plain reference and the path elsewhere."""
    if not run_ids:
        return {}
    if connection.vendor != "postgresql":
        return timeline_links_for_runs_orm(run_ids=run_ids)
    statement = compiled_once("regressions.timeline_links", lambda: _timeline_links(AnyOf(F("pk"), [])))
    return _links(statement.rows(list(run_ids)))


def timeline_links_for_runs_orm(*, run_ids: list[int]) -> dict[int, TimelineLink]:
    """``timeline_links_for_runs`` read through the ORM (``pk__in``)."""
    return _links(_timeline_links(Q(pk__in=run_ids))) if run_ids else {}


def _timeline_links(where: Any) -> QuerySet[Any, Any]:
    # Unordered: BuildRun's default ordering joined five tables into each subquery
    # (9 ms of planning on every board page, issue 40); a run has at most one BuildRun.
    build_runs = BuildRun.objects.filter(run_uuid=OuterRef("uuid")).order_by()
    return (
        Run.objects.filter(where)
        .order_by()
        .annotate(
            sub_id=Subquery(build_runs.values("build__subscription_id")[:1]),
            ref_id=Subquery(build_runs.values("reference_config_id")[:1]),
        )
        .filter(sub_id__isnull=False)
        .values_list("pk", "sub_id", "ref_id")
    )


def _links(rows: Any) -> dict[int, TimelineLink]:
    return {pk: TimelineLink(sub_id, ref_id, "nightly") for pk, sub_id, ref_id in rows}


def rig_aa_summary(*, rig_id: int) -> RigAaSummary:
    """Return the rig's A/A checks in brief (selectors_aa.py): for the rig's page."""
    return rigs_aa_summaries(rig_ids=[rig_id])[rig_id]

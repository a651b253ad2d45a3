"""The whole nightly chain once, through Celery on the real Redis broker:
beat tick → detection (git ls-remote) → the rig's worker builds llama-server
at the new commit (cmake, cached by commit) → benchmarks Gemma 3 270M with it
→ posts the runs to the live service → build report → verdict → a re-run of
the same build confirms it → webhook alert to a local receiver → bisection
builds and benchmarks midpoint commits until the first slow one is named on the
verdict and the timeline.

Two nights: the first builds upstream's head (no baseline yet; benchmarked
three times, the A/A runs the noise floor is measured on). Upstream then moves
on by two harmless commits, the commit that really slows every decode step,
and a harmless one after it; the second night builds the last. Harmless commits
touch files no target compiles, so every build differs from another by
llama-context.cpp at most (and the generated build-info): the shared build tree
recompiles that one file, and ccache (under the test build cache) serves it when
the bisection flips back to a version it compiled before. Commits carry fixed
dates, so every session makes the same shas and the build cache (by commit,
~/.cache/rigboard-tests/builds/) is hit after the first run; the first session
pays for the full llama-server build. (A/B confirmation has its own chain test,
test_ab_chain.py.)"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.apps import apps as django_apps
from django.db.models import Q
from django.test import Client
from django_celery_beat.models import IntervalSchedule, PeriodicTask
from django_celery_beat.schedulers import DatabaseScheduler

from leaderboard.celery import app as service_app
from leaderboard.regressions.models import (
    AlertDelivery,
    BisectStatus,
    BuildRecord,
    BuildStatus,
    Verdict,
)
from leaderboard.regressions.states import BuildRunRole
from leaderboard.regressions.verdict import MIN_NOISE_RUNS
from leaderboard.results.models import Run
from tests.fixtures.regressions import GemmaNightlyRig, Upstream, WebhookReceiver
from tests.fixtures.waiting import wait_until

pytestmark = [pytest.mark.llama, pytest.mark.celery_worker, pytest.mark.django_db(transaction=True)]

NIGHT_TIMEOUT_S = 50 * 60


def _beat_until(predicate: Callable[[], bool], timeout_s: float) -> None:
    """Tick the database scheduler (what ``celery beat`` runs) until ``predicate``."""
    scheduler = DatabaseScheduler(app=service_app, lazy=False)
    try:
        wait_until(lambda: (scheduler.tick(), predicate())[1], timeout_s, "the nightly chain", every_s=2)
    finally:
        # Write last-run times now: the scheduler also syncs at interpreter exit,
        # when the test database is gone.
        scheduler.sync()


def test_the_nightly_chain_catches_a_real_slowdown_alerts_once_and_bisects_to_the_slow_commit(
    upstream: Upstream,
    gemma_nightly_rig: Callable[..., GemmaNightlyRig],
    service_worker: None,
    webhook_receiver: WebhookReceiver,
    settings: Any,
    tmp_path: Path,
    client: Client,
) -> None:
    settings.RIGBOARD_REPO_CACHE_DIR = tmp_path / "repos"
    # The re-run rule, then bisection of what it confirmed.
    made = gemma_nightly_rig("nightly-cpu", webhook_url=webhook_receiver.url, confirm_mode="rerun", bisect=True)
    sub, ref, worker = made.subscription, made.reference, made.worker
    # The schedule the data migration made, edited as staff would in the admin: every second.
    importlib.import_module("leaderboard.regressions.migrations.0002_nightly_schedule").create_schedule(
        django_apps, None
    )
    every_second, _ = IntervalSchedule.objects.get_or_create(every=1, period="seconds")
    PeriodicTask.objects.filter(name="nightly regression").update(interval=every_second, crontab=None)

    def benchmarked(commit: str) -> Callable[[], bool]:
        # The build's status is stored before its runs are judged: wait for the verdict too.
        return lambda: BuildRecord.objects.filter(
            Q(status=BuildStatus.BENCHMARKED, verdicts__isnull=False)
            | Q(status__in=[BuildStatus.FAILED, BuildStatus.ERROR]),
            commit=commit,
            bisect_of__isnull=True,
        ).exists()

    # Night 1: upstream's head, no baseline yet; benchmarked MIN_NOISE_RUNS
    # times on the spot, so night 2 is judged with a measured noise floor.
    good = upstream.head()
    _beat_until(benchmarked(good), NIGHT_TIMEOUT_S)
    build_a = BuildRecord.objects.get(commit=good)
    assert build_a.status == BuildStatus.BENCHMARKED, (build_a.error, build_a.log_tail[-2000:], worker.log()[-3000:])
    first_verdict = build_a.verdicts.get()
    assert first_verdict.kind == "none" and "noise floor unknown: first builds" in first_verdict.reason
    assert build_a.build_runs.filter(status="finished").count() == MIN_NOISE_RUNS

    # Upstream moves on: two harmless commits, the slow one, a harmless one.
    harmless_1 = upstream.commit_file("docs/nightly-1.md", "one\n", "docs : note one", "2026-02-01T00:00:00+00:00")
    harmless_2 = upstream.commit_file("docs/nightly-2.md", "two\n", "docs : note two", "2026-02-02T00:00:00+00:00")
    slow = upstream.commit_slowdown(date="2026-02-03T00:00:00+00:00")
    last = upstream.commit_file("docs/nightly-3.md", "three\n", "docs : note three", "2026-02-04T00:00:00+00:00")

    # Night 2: the last commit, slow since the third commit before it.
    _beat_until(benchmarked(last), NIGHT_TIMEOUT_S)
    build_b = BuildRecord.objects.get(commit=last, bisect_of__isnull=True)
    assert build_b.status == BuildStatus.BENCHMARKED, (build_b.error, build_b.log_tail[-2000:], worker.log()[-3000:])
    assert build_b.previous_commit == good and build_b.compiler
    run = Run.objects.get(uuid=build_b.build_runs.get(repeat=0).run_uuid)
    assert run.stack.build == last and run.n_samples == 6
    verdict = build_b.verdicts.get()
    assert verdict.kind == "regression", verdict.reason
    assert verdict.noise_n_runs == MIN_NOISE_RUNS and verdict.noise_floor_pct is not None
    assert verdict.effect_pct is not None and verdict.effect_pct < -3
    assert (verdict.commit_from, verdict.commit_to) == (good, last)

    # The change is re-run on the same build (the rig's cache: no rebuild) before it stands.
    _beat_until(lambda: not Verdict.objects.filter(pk=verdict.pk, confirmation__in=["", "pending"]).exists(), 600)
    verdict.refresh_from_db()
    assert verdict.confirmation == "confirmed", (verdict.reason, worker.log()[-3000:])
    assert verdict.confirm_effect_pct is not None and verdict.confirm_effect_pct < -3
    rerun = Run.objects.get(uuid=build_b.build_runs.get(role=BuildRunRole.RERUN).run_uuid)
    assert rerun.stack.build == last and rerun.n_samples == 6

    # What stands is bisected: midpoints built and benchmarked until one commit is left.
    ended = [BisectStatus.DONE, BisectStatus.FAILED]
    wait_until(
        lambda: Verdict.objects.filter(pk=verdict.pk, bisect_status__in=ended).exists(),
        NIGHT_TIMEOUT_S, "the bisection", every_s=2, detail=lambda: worker.log()[-4000:],
    )  # fmt: skip
    verdict.refresh_from_db()
    assert verdict.bisect_status == BisectStatus.DONE, verdict.reason
    assert verdict.first_bad_commit == slow
    midpoints = BuildRecord.objects.filter(bisect_of=verdict).order_by("created_at")
    # (good, last] = [harmless_1, harmless_2, slow, last]: harmless_2 is good, then slow is bad.
    assert [m.commit for m in midpoints] == [harmless_2, slow]
    assert harmless_1 not in {m.commit for m in midpoints}
    for midpoint in midpoints:
        assert midpoint.status == BuildStatus.BENCHMARKED and midpoint.binary_path, midpoint.log_tail[-2000:]
        mid_run = Run.objects.get(uuid=midpoint.build_runs.get().run_uuid)
        assert mid_run.stack.build == midpoint.commit and mid_run.n_samples == 6
    fast_mid, slow_mid = (Run.objects.get(uuid=m.build_runs.get().run_uuid) for m in midpoints)
    assert fast_mid.decode_tokens_per_s_median > slow_mid.decode_tokens_per_s_median

    html = client.get(f"/regressions/{sub.pk}/{ref.pk}/").content.decode()
    assert f'<code class="first-bad-commit">{slow[:10]}</code>' in html
    assert f"first slow commit {slow[:10]}" in html  # the decode chart's hover text
    # Bisection builds stay off the timeline: the two nightly builds only.
    assert harmless_2[:10] not in html

    # One alert for the confirmed regression, bisection or not.
    wait_until(lambda: webhook_receiver.bodies, 60, "the webhook's alert", every_s=0.5)
    (body,) = webhook_receiver.bodies
    assert "regression on nightly-cpu" in body["text"] and body["content"] == body["text"]
    assert AlertDelivery.objects.get(verdict=verdict).status == "sent"

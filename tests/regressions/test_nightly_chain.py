"""The whole nightly chain once, through Celery on the real Redis broker:
beat tick → detection (git ls-remote) → the rig's worker builds llama-server
at the new commit (cmake, cached by commit) → benchmarks Gemma 3 270M with it
→ posts the runs to the live service → build report → verdict → a re-run of
the same build confirms it → webhook alert to a local receiver.

Two nights: the first builds upstream's head (no baseline yet; benchmarked
three times, the A/A runs the noise floor is measured on), the second a
commit that really slows llama_decode down. The first session pays for the full
llama-server build (plus an incremental one for the slow commit); the builds
are cached by commit under ~/.cache/rigboard-tests/builds/ afterwards."""

from __future__ import annotations

import importlib
from collections.abc import Callable

import pytest
from django.apps import apps as django_apps
from django.db.models import Q
from django_celery_beat.models import IntervalSchedule, PeriodicTask
from django_celery_beat.schedulers import DatabaseScheduler

from leaderboard.celery import app as service_app
from leaderboard.regressions.models import (
    AlertDelivery,
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


def test_the_nightly_chain_catches_a_real_slowdown_and_alerts_once(
    upstream: Upstream,
    gemma_nightly_rig: Callable[..., GemmaNightlyRig],
    service_worker: None,
    webhook_receiver: WebhookReceiver,
) -> None:
    # The re-run rule (A/B confirmation has its own chain test, test_ab_chain.py).
    made = gemma_nightly_rig("nightly-cpu", webhook_url=webhook_receiver.url, confirm_mode="rerun")
    worker = made.worker
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
        ).exists()

    # Night 1: upstream's head, no baseline yet; benchmarked MIN_NOISE_RUNS
    # times on the spot, so night 2 is judged with a measured noise floor.
    first = upstream.head()
    _beat_until(benchmarked(first), NIGHT_TIMEOUT_S)
    build_a = BuildRecord.objects.get(commit=first)
    assert build_a.status == BuildStatus.BENCHMARKED, (build_a.error, build_a.log_tail[-2000:], worker.log()[-3000:])
    first_verdict = build_a.verdicts.get()
    assert first_verdict.kind == "none" and "noise floor unknown: first builds" in first_verdict.reason
    assert build_a.build_runs.filter(status="finished").count() == MIN_NOISE_RUNS

    # Night 2: a commit that slows every decode step.
    slow = upstream.commit_slowdown()
    _beat_until(benchmarked(slow), NIGHT_TIMEOUT_S)
    build_b = BuildRecord.objects.get(commit=slow)
    assert build_b.status == BuildStatus.BENCHMARKED, (build_b.error, build_b.log_tail[-2000:], worker.log()[-3000:])
    assert build_b.previous_commit == first and build_b.compiler
    run = Run.objects.get(uuid=build_b.build_runs.get(repeat=0).run_uuid)
    assert run.stack.build == slow and run.n_samples == 6
    verdict = build_b.verdicts.get()
    assert verdict.kind == "regression", verdict.reason
    assert verdict.noise_n_runs == MIN_NOISE_RUNS and verdict.noise_floor_pct is not None
    assert verdict.effect_pct is not None and verdict.effect_pct < -3
    assert (verdict.commit_from, verdict.commit_to) == (first, slow)

    # The change is re-run on the same build (the rig's cache: no rebuild) before it stands.
    _beat_until(lambda: not Verdict.objects.filter(pk=verdict.pk, confirmation__in=["", "pending"]).exists(), 600)
    verdict.refresh_from_db()
    assert verdict.confirmation == "confirmed", (verdict.reason, worker.log()[-3000:])
    assert verdict.confirm_effect_pct is not None and verdict.confirm_effect_pct < -3
    rerun = Run.objects.get(uuid=build_b.build_runs.get(role=BuildRunRole.RERUN).run_uuid)
    assert rerun.stack.build == slow and rerun.n_samples == 6

    wait_until(lambda: webhook_receiver.bodies, 60, "the webhook's alert", every_s=0.5)
    (body,) = webhook_receiver.bodies
    assert "regression on nightly-cpu" in body["text"] and body["content"] == body["text"]
    assert AlertDelivery.objects.get(verdict=verdict).status == "sent"

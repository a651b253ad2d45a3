"""Bisection for real: a regression between two nightly builds is bisected by
building each midpoint commit on the rig (runners/builds/build.py through the same
Celery task as a nightly build, real cmake) and benchmarking it on Gemma 3
270M, until the first slow commit is named on the verdict and the timeline.

Upstream: the shipped llama.cpp tree (good), two harmless commits, the commit
that really slows every decode step, and a harmless one after it; the
nightly builds the first and the last. Harmless commits touch files no target
compiles, so every build differs from another by llama-context.cpp at most
(and the generated build-info): the shared build tree recompiles that one
file, and ccache (under the test build cache) serves it when a bisection
flips back to a version it compiled before. Commits carry fixed dates, so
every session makes the same shas and the build cache (by commit) is hit
after the first run."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from leaderboard.regressions.models import BisectStatus, BuildRecord, BuildStatus
from leaderboard.regressions.services.detection import subscription_check
from leaderboard.regressions.verdict import MIN_NOISE_RUNS
from leaderboard.results.models import Run
from tests.fixtures.regressions import GemmaNightlyRig, Upstream
from tests.fixtures.waiting import wait_until

pytestmark = [pytest.mark.llama, pytest.mark.celery_worker, pytest.mark.django_db(transaction=True)]

# A cold cache builds llama-server once in full (~5–10 min on 2 cores) plus a few one-file rebuilds.
TIMEOUT_S = 50 * 60


def _wait(predicate: Callable[[], bool], what: str, worker: Any, timeout_s: float = TIMEOUT_S) -> None:
    wait_until(predicate, timeout_s, what, every_s=2, detail=lambda: worker.log()[-4000:])


def test_bisection_builds_and_benchmarks_midpoints_and_names_the_first_slow_commit(
    upstream: Upstream,
    gemma_nightly_rig: Callable[..., GemmaNightlyRig],
    service_worker: None,
    settings: Any,
    tmp_path: Path,
    client: Client,
) -> None:
    settings.RIGBOARD_REPO_CACHE_DIR = tmp_path / "repos"
    made = gemma_nightly_rig(
        "bisect-cpu",
        bisect=True,
        confirm_mode="rerun",
        confirm_runs=0,  # confirmation has its own chain test (test_nightly_chain); this one bisects
    )
    sub, ref, worker = made.subscription, made.reference, made.worker

    def settled(commit: str) -> Callable[[], bool]:
        """True once the build failed, or was judged and is not (or no longer) being bisected."""

        def check() -> bool:
            build = BuildRecord.objects.filter(commit=commit, bisect_of__isnull=True).first()
            if build is None or build.status == BuildStatus.QUEUED:
                return False
            if build.status != BuildStatus.BENCHMARKED:
                return True
            return build.verdicts.exclude(bisect_status=BisectStatus.RUNNING).exists()

        return check

    # Night 1: the good commit, benchmarked MIN_NOISE_RUNS times (the noise floor's A/A runs).
    good = upstream.head()
    assert subscription_check(subscription=sub).reason == "queued"
    _wait(settled(good), "the first nightly build", worker)
    first = BuildRecord.objects.get(commit=good)
    assert first.status == BuildStatus.BENCHMARKED, (first.error, first.log_tail[-2000:], worker.log()[-3000:])
    assert first.build_runs.filter(status="finished").count() == MIN_NOISE_RUNS

    # Upstream moves on: two harmless commits, the slow one, a harmless one.
    harmless_1 = upstream.commit_file("docs/nightly-1.md", "one\n", "docs : note one", "2026-02-01T00:00:00+00:00")
    harmless_2 = upstream.commit_file("docs/nightly-2.md", "two\n", "docs : note two", "2026-02-02T00:00:00+00:00")
    slow = upstream.commit_slowdown(date="2026-02-03T00:00:00+00:00")
    last = upstream.commit_file("docs/nightly-3.md", "three\n", "docs : note three", "2026-02-04T00:00:00+00:00")

    # Night 2: the last commit regresses; bisection builds midpoints until one commit is left.
    assert subscription_check(subscription=sub).reason == "queued"
    _wait(settled(last), "the second nightly build and its bisection", worker)
    night = BuildRecord.objects.get(commit=last)
    assert night.status == BuildStatus.BENCHMARKED, (night.error, night.log_tail[-2000:], worker.log()[-3000:])
    verdict = night.verdicts.get()
    assert verdict.kind == "regression", verdict.reason
    assert (verdict.commit_from, verdict.commit_to) == (good, last)
    assert verdict.noise_n_runs == MIN_NOISE_RUNS and verdict.noise_floor_pct is not None

    verdict.refresh_from_db()
    assert verdict.bisect_status == BisectStatus.DONE, verdict.reason
    assert verdict.first_bad_commit == slow
    midpoints = BuildRecord.objects.filter(bisect_of=verdict).order_by("created_at")
    # (good, last] = [harmless_1, harmless_2, slow, last]: harmless_2 is good, then slow is bad.
    assert [m.commit for m in midpoints] == [harmless_2, slow]
    assert harmless_1 not in {m.commit for m in midpoints}
    for midpoint in midpoints:
        assert midpoint.status == BuildStatus.BENCHMARKED and midpoint.binary_path, midpoint.log_tail[-2000:]
        run = Run.objects.get(uuid=midpoint.build_runs.get().run_uuid)
        assert run.stack.build == midpoint.commit and run.n_samples == 6
    fast_mid, slow_mid = (Run.objects.get(uuid=m.build_runs.get().run_uuid) for m in midpoints)
    assert fast_mid.decode_tokens_per_s_median > slow_mid.decode_tokens_per_s_median

    html = client.get(f"/regressions/{sub.pk}/{ref.pk}/").content.decode()
    assert f'<code class="first-bad-commit">{slow[:10]}</code>' in html
    assert f"first slow commit {slow[:10]}" in html  # the decode chart's hover text
    # Bisection builds stay off the timeline: the two nightly builds only.
    assert harmless_2[:10] not in html

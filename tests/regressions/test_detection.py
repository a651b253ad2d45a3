"""New-build detection against a real git repository (ls-remote for real) and
dispatch to the rig's queue on the real Redis broker."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

import pytest
import redis
from django.apps import apps as django_apps
from django_celery_beat.models import PeriodicTask

from leaderboard.regressions.models import BuildRecord, BuildRun, BuildStatus, ReferenceConfig, Subscription
from leaderboard.regressions.services.detection import NIGHTLY_RIG_TASK, subscription_check
from leaderboard.regressions.tasks import NIGHTLY_TASK
from leaderboard.regressions.verdict import MIN_NOISE_RUNS
from leaderboard.results.models import Rig
from runners.builds.gitrepo import commits_between, ls_remote
from tests.fixtures.celery_worker import queued_messages
from tests.fixtures.regressions import Upstream

pytestmark = pytest.mark.django_db(transaction=True)


def _subscription(rig: Rig, url: str, **fields: Any) -> Subscription:
    sub = Subscription.objects.create(rig=rig, repo_url=url, branch="master", build_flags="-DGGML_NATIVE=OFF", **fields)
    ReferenceConfig.objects.create(
        subscription=sub, name="gemma decode", spec={"server": {"model": "/models/gemma.gguf"}, "workload": {}}
    )
    return sub


def test_ls_remote_returns_the_branch_head_and_none_for_a_missing_branch(small_upstream: Upstream) -> None:
    assert ls_remote(small_upstream.url, "master") == small_upstream.head()
    assert ls_remote(small_upstream.url, "no-such-branch") is None


def test_commits_between_walks_the_range_oldest_first(small_upstream: Upstream) -> None:
    first = small_upstream.head()
    second = small_upstream.commit_file("a.txt", "a", "second", "2026-01-02T00:00:00+00:00")
    third = small_upstream.commit_file("b.txt", "b", "third", "2026-01-03T00:00:00+00:00")
    assert commits_between(small_upstream.path, first, third) == [second, third]


def test_a_new_head_is_queued_once_on_the_rigs_queue(
    small_upstream: Upstream, make_rig: Callable[..., Rig], celery_broker: redis.Redis
) -> None:
    rig = make_rig(name="nightly-rig")
    sub = _subscription(rig, small_upstream.url)

    first = subscription_check(subscription=sub)
    again = subscription_check(subscription=sub)

    assert first.reason == "queued" and first.build is not None
    assert again.build is None and again.reason == "already tested on this rig"
    build = BuildRecord.objects.get()
    assert build.commit == small_upstream.head() and build.status == BuildStatus.QUEUED
    # A first build runs its reference config MIN_NOISE_RUNS times: the A/A
    # runs the next verdict's noise floor is measured on.
    build_runs = list(BuildRun.objects.filter(build=build).order_by("repeat"))
    assert [br.repeat for br in build_runs] == list(range(MIN_NOISE_RUNS))
    messages = queued_messages(celery_broker, "rig.nightly-rig")
    assert len(messages) == 1
    assert messages[0]["headers"]["task"] == NIGHTLY_RIG_TASK
    spec = messages[0]["args"][0]
    assert spec["build"] == {
        "id": build.pk,
        "repo_url": small_upstream.url,
        "commit": small_upstream.head(),
        "source": "git",
        "flags": "-DGGML_NATIVE=OFF",
        "jobs": 2,
    }
    assert [r["run_uuid"] for r in spec["runs"]] == [str(br.run_uuid) for br in build_runs]
    assert [r["name"] for r in spec["runs"]] == ["gemma decode", "gemma decode (repeat 1)", "gemma decode (repeat 2)"]
    assert spec["runs"][0]["config"]["server"]["model"] == "/models/gemma.gguf"
    sub.refresh_from_db()
    assert sub.last_head == small_upstream.head()


def test_a_later_commit_is_queued_with_the_previous_build_as_range_start(
    small_upstream: Upstream, make_rig: Callable[..., Rig], celery_broker: redis.Redis
) -> None:
    sub = _subscription(make_rig(name="nightly-rig"), small_upstream.url)
    old = subscription_check(subscription=sub).head
    new = small_upstream.commit_file("c.txt", "c", "change", "2026-01-05T00:00:00+00:00")

    result = subscription_check(subscription=sub)

    assert result.build is not None and result.build.commit == new
    assert result.build.previous_commit == old
    assert len(queued_messages(celery_broker, "rig.nightly-rig")) == 2


def test_later_builds_run_once_when_the_history_holds_enough_finished_runs(
    small_upstream: Upstream, make_rig: Callable[..., Rig], celery_broker: redis.Redis
) -> None:
    sub = _subscription(make_rig(name="nightly-rig"), small_upstream.url)
    first = subscription_check(subscription=sub).build
    assert first is not None
    first.build_runs.filter(repeat__gt=0).update(status="failed")
    first.build_runs.filter(repeat=0).update(status="finished")
    BuildRecord.objects.filter(pk=first.pk).update(status=BuildStatus.BENCHMARKED)
    small_upstream.commit_file("c.txt", "c", "change", "2026-01-05T00:00:00+00:00")

    second = subscription_check(subscription=sub).build

    # One finished run so far: the second build makes up the other two.
    assert second is not None and second.build_runs.count() == MIN_NOISE_RUNS - 1
    second.build_runs.update(status="finished")
    BuildRecord.objects.filter(pk=second.pk).update(status=BuildStatus.BENCHMARKED)
    small_upstream.commit_file("d.txt", "d", "change", "2026-01-06T00:00:00+00:00")
    third = subscription_check(subscription=sub).build
    assert third is not None and third.build_runs.count() == 1


def test_an_unreachable_repository_is_reported_not_raised(make_rig: Callable[..., Rig], tmp_path: Any) -> None:
    sub = _subscription(make_rig(name="nightly-rig"), str(tmp_path / "missing"))
    result = subscription_check(subscription=sub)
    assert result.build is None and result.reason.startswith("ls-remote failed")
    assert not BuildRecord.objects.exists()


def test_the_nightly_schedule_is_a_periodic_task_made_by_the_migration() -> None:
    # Transactional tests flush the data migrations' rows, so run its function again (it is idempotent).
    migration = importlib.import_module("leaderboard.regressions.migrations.0002_nightly_schedule")
    migration.create_schedule(django_apps, None)
    migration.create_schedule(django_apps, None)
    task = PeriodicTask.objects.get(name="nightly regression")
    assert task.task == NIGHTLY_TASK and task.enabled
    assert task.crontab is not None and (task.crontab.hour, task.crontab.minute) == ("3", "0")


def test_saving_a_subscription_in_the_admin_restores_a_deleted_schedule(
    small_upstream: Upstream, make_rig: Callable[..., Rig], admin_client: Any
) -> None:
    PeriodicTask.objects.filter(name="nightly regression").delete()
    rig = make_rig(name="nightly-rig")
    response = admin_client.post(
        "/admin/regressions/subscription/add/",
        {
            "rig": rig.pk, "repo_url": small_upstream.url, "branch": "master", "build_flags": "-DGGML_CUDA=ON",
            "is_active": "on", "alpha": "0.01", "threshold_pct": "3", "noise_k": "5", "noise_runs": "10",
            "baseline_mode": "previous",
            "baseline_builds": "5", "build_jobs": "2", "confirm_runs": "1", "webhook_url": "", "alert_emails": "",
            "confirm_mode": "ab", "ab_max_pairs": "8", "follows": "commits", "release_source": "git",
            "aa_every_days": "7", "resolve_pct": "2",
            "reference_configs-TOTAL_FORMS": "0", "reference_configs-INITIAL_FORMS": "0",
        },
    )  # fmt: skip
    assert response.status_code == 302, response.content.decode()[:2000]
    assert Subscription.objects.get().build_flags == "-DGGML_CUDA=ON"
    assert PeriodicTask.objects.get(name="nightly regression").task == NIGHTLY_TASK


def test_run_now_in_the_admin_queues_the_new_head(
    small_upstream: Upstream, make_rig: Callable[..., Rig], celery_broker: redis.Redis, admin_client: Any
) -> None:
    sub = _subscription(make_rig(name="nightly-rig"), small_upstream.url)
    response = admin_client.post(
        "/admin/regressions/subscription/", {"action": "run_now", "_selected_action": [sub.pk]}, follow=True
    )
    assert response.status_code == 200
    assert "queued" in response.content.decode()
    assert BuildRecord.objects.filter(subscription=sub, commit=small_upstream.head()).exists()
    assert len(queued_messages(celery_broker, "rig.nightly-rig")) == 1

"""A subscription following llama.cpp releases: the newest release found (git
tags for real with ls-remote; the package index's version list for real with
``pip index versions`` on an index on disk), queued on the rig's queue on the
real Redis broker under its tag, and a regression between releases bisected
to two consecutive releases (then, with git, to the commit inside).

The rig is played by the test at its boundary: it posts each queued run
through the real run_create and sends the build report the rig would
(``answer``); building real releases is too slow for this suite
(test_release_builds.py builds releases for real, on a toy tree)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import redis

from leaderboard.regressions.models import BisectStatus, BuildRecord, BuildRun, ReferenceConfig, Subscription
from leaderboard.regressions.services.builds import build_report_record
from leaderboard.regressions.services.detection import subscription_check
from leaderboard.regressions.states import BuildRunStatus, BuildStatus
from leaderboard.results.models import Rig
from tests.fixtures.celery_worker import queued_messages
from tests.fixtures.regressions import Upstream, git, post_run
from tests.fixtures.releases import write_release_index

pytestmark = pytest.mark.django_db(transaction=True)

FAST = [100.0, 101.0, 99.0, 100.5, 99.5, 100.2]
SLOW = [v * 0.7 for v in FAST]


def answer(
    build: BuildRecord, samples: list[float] | Callable[[str], list[float]], *, bench_time_s: float = 2.5
) -> None:
    """Play the rig: post every run the build still awaits (``samples``, or
    ``samples(commit)`` of the binary the run uses: an A/B pair's A side runs
    the baseline's), then report the build."""
    runs = list(build.build_runs.filter(status=BuildRunStatus.QUEUED))
    for index, build_run in enumerate(runs):
        values = samples(build_run.run_commit or build.commit) if callable(samples) else samples
        # Runs of one binary differ a little, as real ones do (the noise floor is measured on them).
        post_run(build, [v * (1 + 0.003 * (index % 3)) for v in values], build_run=build_run)
    report = {
        "build_id": build.pk,
        "status": "built",
        "error": "",
        "build": {"build_time_s": 3.0, "compiler": "cc", "log_tail": "", "binary_path": "/b", "cached": False},
        "runs": [{"build_run_id": br.pk, "status": "finished", "error": ""} for br in runs],
        "bench_time_s": bench_time_s,
    }
    build_report_record(report=report)


def _subscribe(rig: Rig, url: str, **fields: Any) -> Subscription:
    sub = Subscription.objects.create(rig=rig, repo_url=url, follows="releases", **fields)
    ReferenceConfig.objects.create(subscription=sub, name="gemma decode", spec={"server": {}, "workload": {}})
    return sub


def test_the_newest_git_release_is_queued_under_its_tag(
    small_upstream: Upstream, make_rig: Callable[..., Rig], celery_broker: redis.Redis
) -> None:
    git(small_upstream.path, "tag", "b11001")
    small_upstream.commit_file("a.txt", "a\n", "a", "2026-02-02T00:00:00+00:00")
    git(small_upstream.path, "tag", "b11002")
    small_upstream.commit_file("b.txt", "b\n", "after the release", "2026-02-03T00:00:00+00:00")
    sub = _subscribe(make_rig(name="release-rig"), small_upstream.url)

    first = subscription_check(subscription=sub)
    again = subscription_check(subscription=sub)

    # The release, not the branch's newer head.
    assert first.reason == "queued" and first.build is not None and first.build.commit == "b11002"
    assert again.reason == "already tested on this rig"
    assert first.build.release == 11002
    assert first.build.release_url == "https://github.com/ggml-org/llama.cpp/releases/tag/b11002"
    (message,) = queued_messages(celery_broker, "rig.release-rig")
    assert message["args"][0]["build"]["commit"] == "b11002"
    assert message["args"][0]["build"]["source"] == "git"
    sub.refresh_from_db()
    assert sub.last_head == "b11002"


def test_without_git_the_newest_release_on_the_package_index_is_queued_from_its_sdist(
    tmp_path: Path, make_rig: Callable[..., Rig], celery_broker: redis.Redis, settings: Any
) -> None:
    settings.RIGBOARD_RELEASE_INDEX_URL = write_release_index(tmp_path / "index", [9093, 11401, 11434])
    sub = _subscribe(make_rig(name="sdist-rig"), "https://github.com/ggml-org/llama.cpp", release_source="sdist")

    result = subscription_check(subscription=sub)

    assert result.reason == "queued" and result.build is not None and result.build.commit == "b11434"
    (message,) = queued_messages(celery_broker, "rig.sdist-rig")
    assert message["args"][0]["build"]["source"] == "sdist"


def test_an_unreachable_index_is_a_reason_not_an_error(
    tmp_path: Path, make_rig: Callable[..., Rig], settings: Any
) -> None:
    settings.RIGBOARD_RELEASE_INDEX_URL = (tmp_path / "no-index").as_uri()
    sub = _subscribe(make_rig(name="lost-rig"), "https://github.com/ggml-org/llama.cpp", release_source="sdist")

    result = subscription_check(subscription=sub)

    assert result.build is None and result.reason.startswith("the release list failed")
    assert not BuildRecord.objects.exists()


def _regression(sub: Subscription, good: str, bad: str) -> Any:
    """Store ``good`` (fast, its A/A runs) and ``bad`` (slow) as nightly builds; return the bad build's verdict."""
    from leaderboard.regressions.services.detection import build_queue

    first = build_queue(subscription=sub, commit=good)
    answer(first, FAST)
    second = build_queue(subscription=sub, commit=bad, previous_commit=good)
    answer(second, SLOW)
    return second.verdicts.get()


def _bisect_until_done(verdict: Any, slow_from: Callable[[str], bool], limit: int = 10) -> list[str]:
    """Answer each bisection build (slow where ``slow_from(commit)``) until the bisection ends; return their commits."""
    made = []
    for _ in range(limit):
        verdict.refresh_from_db()
        if verdict.bisect_status != BisectStatus.RUNNING:
            return made
        pending = BuildRecord.objects.get(bisect_of=verdict, status=BuildStatus.QUEUED)
        made.append(pending.commit)
        answer(pending, SLOW if slow_from(pending.commit) else FAST)
    raise AssertionError(f"bisection did not end after {limit} builds: {made}")


def test_a_regression_between_releases_is_narrowed_to_two_consecutive_releases(
    tmp_path: Path, make_rig: Callable[..., Rig], celery_broker: redis.Redis, settings: Any, client: Any
) -> None:
    settings.RIGBOARD_RELEASE_INDEX_URL = write_release_index(tmp_path / "index", [100, 101, 103, 106, 110, 111])
    sub = _subscribe(
        make_rig(name="sdist-bisect"),
        "https://github.com/ggml-org/llama.cpp",
        release_source="sdist",
        bisect=True,
        confirm_mode="rerun",
        confirm_runs=0,
    )
    verdict = _regression(sub, "b100", "b110")
    assert verdict.kind == "regression" and (verdict.commit_from, verdict.commit_to) == ("b100", "b110")

    built = _bisect_until_done(verdict, lambda tag: int(tag[1:]) >= 106)

    # (b100, b110] holds b101 b103 b106 b110: b103 is fast, b106 slow, and they are consecutive.
    assert built == ["b103", "b106"]
    verdict.refresh_from_db()
    assert verdict.bisect_status == BisectStatus.DONE
    assert (verdict.release_window_from, verdict.release_window_to) == ("b103", "b106")
    # No git history behind source distributions: the first release with the change is the answer.
    assert verdict.first_bad_commit == "b106"
    # Each release on the rig's timeline links its page upstream.
    html = client.get(f"/regressions/{sub.pk}/{verdict.reference_config_id}/").content.decode()
    for tag in ("b100", "b110"):
        assert (
            f'<a href="https://github.com/ggml-org/llama.cpp/releases/tag/{tag}" rel="noopener"><code>{tag}</code>'
            in html
        )


def test_with_git_the_bisection_goes_on_to_the_commit_inside_the_release_window(
    small_upstream: Upstream, make_rig: Callable[..., Rig], celery_broker: redis.Redis, settings: Any, tmp_path: Path
) -> None:
    settings.RIGBOARD_REPO_CACHE_DIR = tmp_path / "repos"
    up = small_upstream
    git(up.path, "tag", "b100")
    one = up.commit_file("one.txt", "1\n", "harmless one", "2026-02-01T00:00:00+00:00")
    slow = up.commit_file("two.txt", "2\n", "the slow one", "2026-02-02T00:00:00+00:00")
    three = up.commit_file("three.txt", "3\n", "harmless three", "2026-02-03T00:00:00+00:00")
    git(up.path, "tag", "b101")
    sub = _subscribe(make_rig(name="git-bisect"), up.url, bisect=True, confirm_mode="rerun", confirm_runs=0)
    verdict = _regression(sub, "b100", "b101")
    slow_commits = {slow, three, "b101"}

    built = _bisect_until_done(verdict, lambda commit: commit in slow_commits)

    verdict.refresh_from_db()
    assert (verdict.release_window_from, verdict.release_window_to) == ("b100", "b101")
    assert verdict.bisect_status == BisectStatus.DONE and verdict.first_bad_commit == slow
    # (b100, b101] = one, slow, three: the midpoint slow is slow, then one is fast.
    assert built == [slow, one]
    # Each bisection build goes to the rig as a commit from git.
    specs = [m["args"][0]["build"] for m in queued_messages(celery_broker, "rig.git-bisect")]
    assert {(s["commit"], s["source"]) for s in specs} >= {(slow, "git"), (one, "git")}


def test_the_build_reports_benchmark_time_adds_up_over_its_reports(
    nightly_setup: Callable[..., Any], celery_broker: redis.Redis
) -> None:
    sub, _, make_build = nightly_setup(follows="releases")
    build = make_build("x", FAST, commit="b100")

    for seconds in (2.0, 3.5):
        build_report_record(
            report={
                "build_id": build.pk,
                "status": "built",
                "build": {"build_time_s": 4.0},
                "runs": [{"build_run_id": br.pk, "status": "finished"} for br in BuildRun.objects.filter(build=build)],
                "bench_time_s": seconds,
            }
        )

    build.refresh_from_db()
    assert build.bench_time_s == pytest.approx(5.5) and build.build_time_s == 4.0


def test_the_release_sources_are_one_list_on_the_rig_the_wire_and_the_service() -> None:
    from leaderboard.regressions.models import ReleaseSource
    from runners.builds.releases import ReleaseSource as RigReleaseSource
    from runners.delivery.nightly_schema import RELEASE_SOURCES

    assert sorted(ReleaseSource.values) == sorted(s.value for s in RigReleaseSource) == sorted(RELEASE_SOURCES)

"""``manage.py replay_releases``: a window of releases replayed on a rig, one
after the other, through the nightly chain; killed mid-way (SIGKILL, a real
process), run again, it goes on from the release it stopped at and builds no
release twice.

The command runs as its own process on the test database and the test Redis;
the rig is played by the test at its boundary (tests/regressions/test_release_chain.py's
``answer``: the real run_create and build report; a batch of A/B blocks taken off the
rig's queue and answered with the service's report task), and the release list is
the package index's, read for real from an index on disk."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import redis

from leaderboard.regressions.models import BuildRecord, Replay, ReplayStepState
from leaderboard.regressions.services.aa_checks import AB_RIG_TASK
from leaderboard.regressions.states import BuildRunStatus, BuildStatus
from leaderboard.regressions.tasks import ab_report
from leaderboard.results.models import Rig
from runners.ab_design import rep_order
from tests.fixtures.celery_worker import redis_url_for_tests
from tests.fixtures.gunicorn import test_database_url
from tests.fixtures.releases import write_release_index
from tests.fixtures.waiting import wait_until
from tests.regressions.test_release_chain import FAST, SLOW, answer

pytestmark = pytest.mark.django_db(transaction=True)

ROOT = Path(__file__).resolve().parents[2]


def _start(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    out = log.open("ab")
    return subprocess.Popen(  # noqa: S603 - our own interpreter and manage.py
        [sys.executable, "manage.py", "replay_releases", *args], cwd=ROOT, env=env, stdout=out, stderr=out
    )


def _awaiting() -> list[BuildRecord]:
    return list(BuildRecord.objects.filter(build_runs__status=BuildRunStatus.QUEUED).distinct().order_by("created_at"))


def _answer_blocks(broker: redis.Redis, queue: str, samples: Callable[[str], list[float]]) -> None:
    """Play the rig's A/B task: take each batch of blocks off its queue and report
    it measured, A and B at ``samples(commit)``'s first figure, alternated."""
    while (raw := broker.rpop(queue)) is not None:  # kombu pushes on the left
        message = json.loads(raw)
        if message["headers"]["task"] != AB_RIG_TASK:
            continue  # a nightly dispatch: its runs are answered from the database (``answer``)
        spec = json.loads(base64.b64decode(message["body"]))[0][0]
        blocks = []
        for index in range(spec["first_index"], spec["first_index"] + spec["count"]):
            order = rep_order(index, 4)
            values = [samples(spec[f"{side.value}_commit"])[0] * (1 + 0.002 * ((index + j) % 3))
                      for j, side in enumerate(order)]  # fmt: skip
            blocks.append({"index": index, "sides": [side.value for side in order], "decode_tokens_per_s": values,
                           "contention": "quiet"})  # fmt: skip
        ab_report({"confirmation_id": spec["confirmation_id"], "status": "measured", "design": "interleaved",
                   "wall_s": 4.0, "blocks": blocks})  # fmt: skip


def test_a_replay_killed_mid_way_goes_on_from_where_it_stopped(
    tmp_path: Path, make_rig: Callable[..., Rig], celery_broker: redis.Redis
) -> None:
    rig = make_rig(name="replay-rig")
    reference = tmp_path / "reference.json"
    reference.write_text(json.dumps([{"name": "gemma decode", "spec": {"server": {"threads": 1}, "workload": {}}}]))
    env = {
        **os.environ,
        "DATABASE_URL": test_database_url(),
        "CELERY_BROKER_URL": redis_url_for_tests(),
        "RIGBOARD_RELEASE_INDEX_URL": write_release_index(tmp_path / "index", [100, 101, 103, 106, 110]),
        "DEBUG": "true",
    }
    args = ["--rig", "replay-rig", "--last", "106", "--count", "3", "--source", "sdist"]
    args += ["--reference", str(reference), "--poll-s", "0.1", "--label", "test recording"]
    args += ["--json", str(tmp_path / "replay.json")]
    log = tmp_path / "replay.log"

    first = _start(args, env, log)
    try:
        wait_until(lambda: BuildRecord.objects.filter(commit="b101").exists(), 120, "the first release queued")
    finally:
        first.kill()
        first.wait(timeout=30)
    # Killed while the rig was at work: the rig finishes and reports with nobody waiting.
    (queued,) = _awaiting()
    assert queued.commit == "b101" and queued.status == BuildStatus.QUEUED
    answer(queued, FAST)

    second = _start(args, env, log)
    try:

        def speed(commit: str) -> list[float]:
            return SLOW if commit == "b106" else FAST

        def rig_at_work() -> bool:
            for build in _awaiting():
                answer(build, speed)
            _answer_blocks(celery_broker, rig.queue_name, speed)
            return second.poll() is not None

        wait_until(rig_at_work, 180, "the resumed replay to finish")
    finally:
        if second.poll() is None:
            second.kill()
    output = log.read_text()
    assert second.returncode == 0, output

    # Each release built once, in order, each judged against the one before.
    builds = list(BuildRecord.objects.order_by("created_at"))
    assert [(b.commit, b.previous_commit) for b in builds] == [("b101", ""), ("b103", "b101"), ("b106", "b103")]
    replay = Replay.objects.get()
    assert (replay.first_release, replay.last_release, replay.label) == (101, 106, "test recording")
    assert replay.finished_at is not None
    steps = list(replay.steps.order_by("release"))
    assert [(s.release, s.state, s.build_id) for s in steps] == [
        (b.release, ReplayStepState.DONE, b.pk) for b in builds
    ]
    assert all(s.queued_at and s.settled_at and s.queued_at <= s.settled_at for s in steps)
    # The build and benchmark times the rig reported, per release. A replay judges every step by A/B
    # blocks (screen_every_step), waited for before it goes on: b103's first run saw no change and its
    # blocks agree; b106's blocks confirm its regression. b101, the first, has nothing to compare with.
    assert [b.build_time_s for b in builds] == [3.0, 3.0, 3.0]
    assert builds[0].bench_time_s == pytest.approx(2.5)
    assert [b.bench_time_s for b in builds[1:]] == [pytest.approx(2.5 + 4.0)] * 2  # its run, then one batch
    same = builds[1].verdicts.get()
    assert (same.kind, same.confirmation, same.ab_n_pairs) == ("none", "ab_confirmed", 4)
    slow = builds[2].verdicts.get()
    assert (slow.kind, slow.confirmation, slow.ab_design) == ("regression", "ab_confirmed", "interleaved")
    assert slow.ab_n_pairs == 4
    # The summary says what each release got, with its page upstream.
    assert "b106: Benchmarked; build 3 s, bench" in output and "gemma decode: Regression" in output
    assert "https://github.com/ggml-org/llama.cpp/releases/tag/b106" in output
    assert output.count("3 releases b101..b106 on replay-rig") == 2  # once per start
    # The raw data: every release with its build, verdicts and each run's samples.
    document = json.loads((tmp_path / "replay.json").read_text())
    assert document["format"] == "rigboard-replay/1" and [r["release"] for r in document["releases"]] == [101, 103, 106]
    assert document["releases"][2]["verdicts"][0]["kind"] == "regression"
    first_run = document["releases"][0]["runs"][0]
    assert first_run["decode_tokens_per_s"] == pytest.approx(FAST)


def test_a_replay_needs_a_release_the_source_knows(tmp_path: Path, make_rig: Callable[..., Rig], settings: Any) -> None:
    from django.core.management import CommandError, call_command

    make_rig(name="replay-rig")
    settings.RIGBOARD_RELEASE_INDEX_URL = write_release_index(tmp_path / "index", [100, 101])
    reference = tmp_path / "reference.json"
    reference.write_text(json.dumps([{"name": "gemma decode", "spec": {}}]))

    with pytest.raises(CommandError, match="--last: b999 is not a release"):
        call_command("replay_releases", "--rig", "replay-rig", "--last", "999", "--reference", str(reference))
    with pytest.raises(CommandError, match="--rig: no rig named 'nobody'"):
        call_command("replay_releases", "--rig", "nobody", "--last", "101")
    assert not BuildRecord.objects.exists()

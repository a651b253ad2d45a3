"""Confirmation: a change is re-run on the same build before it stands. The
re-run goes to the rig's queue on the real Redis broker; its run is posted
through the real run_create and reported like any build report."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import redis
from django.core import mail

from leaderboard.regressions.models import AlertDelivery, BuildRun, Confirmation, Verdict
from leaderboard.regressions.selectors import timeline_get
from leaderboard.regressions.services.builds import build_report_record
from leaderboard.regressions.services.detection import NIGHTLY_RIG_TASK
from leaderboard.regressions.states import BuildRunRole, BuildRunStatus
from tests.fixtures.celery_worker import queued_messages, use_broker
from tests.fixtures.regressions import WebhookReceiver, post_run

pytestmark = pytest.mark.django_db(transaction=True)

BASE = [100.0, 101.0, 99.0, 100.5, 99.5, 100.2, 99.8, 100.1, 99.9, 100.3]
SLOW = [v * 0.95 for v in BASE]


@pytest.fixture(autouse=True)
def _locmem_email(settings: Any) -> None:
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"


def _report(build: Any, runs: list[Any], status: str = "built", error: str = "") -> dict[str, Any]:
    return {
        "build_id": build.pk,
        "status": status,
        "error": error,
        "build": {"build_time_s": 1.0, "compiler": "cc", "log_tail": "", "binary_path": "/b", "cached": True},
        "runs": [{"build_run_id": br.pk, "status": "finished", "error": ""} for br in runs],
    }


def _slow_build_pending(
    nightly_setup: Callable[..., Any], broker: redis.Redis
) -> tuple[Any, Any, Verdict, Callable[..., Any]]:
    """A baseline, then a 5% slower build judged a regression and held pending;
    also return the function that makes the next build."""
    sub, ref, make_build = nightly_setup(confirm_runs=1, confirm_mode="rerun")
    good = make_build("a", BASE)
    build_report_record(report=_report(good, list(good.build_runs.all())))
    slow = make_build("b", SLOW)
    broker.delete(sub.rig.queue_name)
    first_runs = list(slow.build_runs.all())
    _, (verdict,) = build_report_record(report=_report(slow, first_runs))
    return sub, slow, verdict, make_build


def _rerun(build: Any) -> Any:
    return BuildRun.objects.get(build=build, role=BuildRunRole.RERUN)


def test_a_change_is_held_pending_and_only_its_rerun_goes_to_the_rig(
    nightly_setup: Callable[..., Any], webhook_receiver: WebhookReceiver, celery_broker: redis.Redis
) -> None:
    sub, slow, verdict, _ = _slow_build_pending(nightly_setup, celery_broker)

    verdict.refresh_from_db()
    slow.refresh_from_db()
    assert (verdict.kind, verdict.confirmation) == ("regression", Confirmation.PENDING)
    assert not slow.accepted  # no baseline while suspect
    assert webhook_receiver.bodies == [] and mail.outbox == [] and not AlertDelivery.objects.exists()
    rerun = _rerun(slow)
    assert rerun.repeat == 1 and rerun.status == BuildRunStatus.QUEUED
    (message,) = queued_messages(celery_broker, sub.rig.queue_name)
    assert message["headers"]["task"] == NIGHTLY_RIG_TASK
    spec = message["args"][0]
    assert spec["build"]["commit"] == "b" * 40
    assert [r["run_uuid"] for r in spec["runs"]] == [str(rerun.run_uuid)]
    assert spec["runs"][0]["name"].endswith("(re-run 1)")
    (point,) = [
        p
        for p in timeline_get(subscription_id=sub.pk, reference_id=verdict.reference_config_id).points
        if p.commit == "b" * 40
    ]
    assert point.confirmation_label == "Awaiting a re-run"


def test_a_reproduced_slowdown_is_confirmed_and_alerted_once(
    nightly_setup: Callable[..., Any], webhook_receiver: WebhookReceiver, celery_broker: redis.Redis
) -> None:
    _, slow, _, _ = _slow_build_pending(nightly_setup, celery_broker)
    rerun = _rerun(slow)
    post_run(slow, [v * 0.952 for v in reversed(BASE)], build_run=rerun)

    _, verdicts = build_report_record(report=_report(slow, [rerun]))
    build_report_record(report=_report(slow, [rerun]))  # sent twice: nothing twice

    (verdict,) = verdicts
    verdict.refresh_from_db()
    slow.refresh_from_db()
    assert (verdict.kind, verdict.confirmation) == ("regression", Confirmation.CONFIRMED)
    assert verdict.effect_pct == pytest.approx(-5.0, abs=0.01)  # the first run's figures stay
    assert verdict.confirm_effect_pct == pytest.approx(-4.8, abs=0.01)
    assert "reproduced by 1 re-run (-4.80%)" in verdict.reason
    assert not slow.accepted
    (body,) = webhook_receiver.bodies
    assert "reproduced by a re-run of the same build: -4.80%" in body["text"]
    assert body["verdict"]["confirmation"] == "confirmed"
    assert len(mail.outbox) == 1


def test_an_outlier_run_not_reproduced_is_refuted_no_alert_and_the_build_stays_a_baseline(
    nightly_setup: Callable[..., Any], webhook_receiver: WebhookReceiver, celery_broker: redis.Redis
) -> None:
    sub, slow, _, make_build = _slow_build_pending(nightly_setup, celery_broker)
    rerun = _rerun(slow)
    post_run(slow, [v + 0.05 for v in BASE], build_run=rerun)

    _, (verdict,) = build_report_record(report=_report(slow, [rerun]))

    verdict.refresh_from_db()
    slow.refresh_from_db()
    assert (verdict.kind, verdict.confirmation) == ("none", Confirmation.REFUTED)
    assert verdict.reason.startswith("not reproduced by 1 re-run (+0.05%)")
    assert "first run -5.00%" in verdict.reason
    assert slow.accepted
    assert webhook_receiver.bodies == [] and mail.outbox == [] and not AlertDelivery.objects.exists()
    (point,) = [
        p
        for p in timeline_get(subscription_id=sub.pk, reference_id=verdict.reference_config_id).points
        if p.commit == "b" * 40
    ]
    assert point.verdict_kind == "none" and point.confirmation_label == "Not reproduced by a re-run"

    # The next build is judged against the run that held (the re-run), not the outlier.
    nxt = make_build("c", [v - 0.05 for v in BASE])
    _, (next_verdict,) = build_report_record(report=_report(nxt, list(nxt.build_runs.all())))
    assert next_verdict.baseline_build == slow
    assert list(next_verdict.baseline_runs.values_list("uuid", flat=True)) == [rerun.run_uuid]
    assert next_verdict.kind == "none", next_verdict.reason


def test_a_rerun_the_rig_could_not_make_leaves_the_first_verdict_standing_and_alerts(
    nightly_setup: Callable[..., Any], webhook_receiver: WebhookReceiver, celery_broker: redis.Redis
) -> None:
    _, slow, _, _ = _slow_build_pending(nightly_setup, celery_broker)
    compiler_before = type(slow).objects.get(pk=slow.pk).compiler

    _, (verdict,) = build_report_record(report=_report(slow, [], status="error", error="cache wiped, git fetch failed"))

    verdict.refresh_from_db()
    slow.refresh_from_db()
    assert (verdict.kind, verdict.confirmation) == ("regression", Confirmation.UNCHECKED)
    assert verdict.reason.endswith("the re-run did not finish; the first run stands")
    rerun = _rerun(slow)
    assert rerun.status == "failed" and "cache wiped" in rerun.error
    assert slow.status == "benchmarked" and slow.compiler == compiler_before  # the build's own record kept
    (body,) = webhook_receiver.bodies
    assert "not re-run" in body["text"]


def test_confirm_runs_zero_lets_the_first_verdict_stand(
    nightly_setup: Callable[..., Any], webhook_receiver: WebhookReceiver
) -> None:
    _, _, make_build = nightly_setup(confirm_runs=0, confirm_mode="rerun")
    good = make_build("a", BASE)
    build_report_record(report=_report(good, list(good.build_runs.all())))
    slow = make_build("b", SLOW)
    _, (verdict,) = build_report_record(report=_report(slow, list(slow.build_runs.all())))
    assert (verdict.kind, verdict.confirmation) == ("regression", "")
    assert not BuildRun.objects.filter(build=slow, role=BuildRunRole.RERUN).exists()
    assert len(webhook_receiver.bodies) == 1


def test_a_rerun_that_cannot_be_queued_leaves_the_first_verdict_standing_and_alerts(
    nightly_setup: Callable[..., Any], webhook_receiver: WebhookReceiver, celery_broker: redis.Redis
) -> None:
    _, _, make_build = nightly_setup(confirm_runs=1, confirm_mode="rerun")
    good = make_build("a", BASE)
    build_report_record(report=_report(good, list(good.build_runs.all())))
    slow = make_build("b", SLOW)
    previous = use_broker("redis://127.0.0.1:1/0")  # nothing listens on port 1
    try:
        _, (verdict,) = build_report_record(report=_report(slow, list(slow.build_runs.all())))
    finally:
        use_broker(previous)

    verdict.refresh_from_db()
    assert (verdict.kind, verdict.confirmation) == ("regression", Confirmation.UNCHECKED)
    assert "re-run not queued (could not reach the Celery broker" in verdict.reason
    assert _rerun(slow).status == "failed"
    assert len(webhook_receiver.bodies) == 1

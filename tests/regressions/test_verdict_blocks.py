"""A verdict confirmed by A/B blocks (the default ``confirm_mode``), through the
real services: the batch goes to the rig's A/B task on the real Redis broker,
each batch's report is judged as it comes back, the verdict is answered
(confirmed, refuted, or unchecked when the rig could not measure), the build
moves on and what stands is alerted; the report says which test its figures
come from, and a recording of the timeline imports to the same answer. The
blocks' figures are chosen here (the chain on real llama-server blocks is
test_ab_chain.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import redis
from django.core import mail

# Registers the alert task, so an alert queued by name runs in-process (eager) here.
import leaderboard.regressions.tasks  # noqa: F401
from leaderboard.regressions.models import AlertDelivery, BuildStatus, Confirmation, Subscription, Verdict
from leaderboard.regressions.report import TEST_BLOCKS, regression_report
from leaderboard.regressions.services.aa_checks import AB_RIG_TASK
from leaderboard.regressions.services.builds import build_report_record
from leaderboard.regressions.services.confirmation import blocks_report_receive
from leaderboard.regressions.tasks import ab_report
from tests.fixtures.celery_worker import queued_messages, use_broker
from tests.fixtures.regressions import WebhookReceiver
from tests.regressions.test_aa_checks import _block

pytestmark = pytest.mark.django_db(transaction=True)

BASE = [100.0, 101.0, 99.0, 100.5, 99.5, 100.2, 99.8, 100.1, 99.9, 100.3]
SLOW = [v * 0.90 for v in BASE]
CLOSED_BROKER = "redis://127.0.0.1:1/0"


@pytest.fixture(autouse=True)
def _locmem_email(settings: Any) -> None:
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"


def _report(build: Any) -> dict[str, Any]:
    return {
        "build_id": build.pk,
        "status": "built",
        "error": "",
        "build": {"build_time_s": 1.0, "compiler": "cc", "log_tail": "", "binary_path": "/b", "cached": True},
        "runs": [{"build_run_id": br.pk, "status": "finished", "error": ""} for br in build.build_runs.all()],
    }


def _blocks_report(verdict: Verdict, blocks: list[dict[str, Any]], status: str = "measured") -> dict[str, Any]:
    return {"confirmation_id": f"vb-{verdict.pk}", "status": status, "design": "interleaved", "error": "",
            "blocks": blocks}  # fmt: skip


def _slow_build_pending(nightly_setup: Callable[..., Any], broker: redis.Redis) -> tuple[Subscription, Any, Verdict]:
    sub, _, make_build = nightly_setup(confirm_mode="blocks")
    good = make_build("a", BASE)
    build_report_record(report=_report(good))
    slow = make_build("b", SLOW)
    broker.delete(sub.rig.queue_name)
    _, (verdict,) = build_report_record(report=_report(slow))
    return sub, slow, verdict


def test_a_change_sends_its_rig_a_batch_of_blocks_of_baseline_and_candidate(
    nightly_setup: Callable[..., Any], celery_broker: redis.Redis
) -> None:
    sub, slow, verdict = _slow_build_pending(nightly_setup, celery_broker)
    assert Subscription._meta.get_field("confirm_mode").default == sub.confirm_mode == "blocks"  # the default
    verdict.refresh_from_db()
    slow.refresh_from_db()
    assert (verdict.kind, verdict.confirmation, slow.status) == ("regression", "pending", BuildStatus.AB_PAIRS)
    (message,) = queued_messages(celery_broker, sub.rig.queue_name)
    assert message["headers"]["task"] == AB_RIG_TASK
    spec = message["args"][0]
    assert (spec["a_commit"], spec["b_commit"]) == ("a" * 40, "b" * 40)
    assert spec["confirmation_id"] == f"vb-{verdict.pk}" and (spec["first_index"], spec["count"]) == (0, 4)
    assert spec["source"] == "git" and spec["report_task"] == "regressions.ab_report"
    assert not slow.build_runs.filter(role__in=["ab_a", "ab_b"]).exists()  # no run-level pairs


def test_slower_blocks_confirm_the_regression_which_is_then_alerted_and_reported(
    nightly_setup: Callable[..., Any], celery_broker: redis.Redis, webhook_receiver: WebhookReceiver
) -> None:
    sub, slow, verdict = _slow_build_pending(nightly_setup, celery_broker)
    celery_broker.delete(sub.rig.queue_name)
    # Through the service's task, as the rig's report arrives.
    answer = ab_report([_blocks_report(verdict, [_block(i, 0.90) for i in range(4)])][0])
    assert answer == {"verdict": verdict.pk, "status": "ab_confirmed"}
    verdict.refresh_from_db()
    slow.refresh_from_db()
    assert (verdict.kind, verdict.confirmation, verdict.ab_design) == ("regression", "ab_confirmed", "interleaved")
    assert verdict.ab_n_pairs == 4 and verdict.ab_effect_pct == pytest.approx(-10.0, abs=0.5)
    assert verdict.ab_ci_low_pct < verdict.ab_effect_pct < verdict.ab_ci_high_pct
    assert slow.status == BuildStatus.BENCHMARKED and not slow.accepted
    assert "4 interleaved A/B blocks" in verdict.reason or "blocks" in verdict.reason
    assert len(webhook_receiver.bodies) == 1 and len(mail.outbox) == 1
    assert queued_messages(celery_broker, sub.rig.queue_name) == []  # answered: nothing more asked

    (rig_answer,) = regression_report(verdict_id=verdict.pk).answers
    assert rig_answer.test == TEST_BLOCKS and rig_answer.n_pairs == 4
    assert "interleaved blocks" in rig_answer.how
    # Each side's figure is its blocks' means: A at 100, B at 90 × the block's wiggle.
    assert rig_answer.baseline.n == 4 and rig_answer.baseline.mean == pytest.approx(100.0)
    assert rig_answer.candidate.mean == pytest.approx(90.0, abs=0.2)
    # A duplicate delivery changes nothing.
    assert blocks_report_receive(report=_blocks_report(verdict, [_block(4, 1.0)])) is None


def test_blocks_that_show_no_change_ask_for_more_then_refute_it_and_heavy_ones_are_not_judged(
    nightly_setup: Callable[..., Any], celery_broker: redis.Redis, webhook_receiver: WebhookReceiver
) -> None:
    sub, slow, verdict = _slow_build_pending(nightly_setup, celery_broker)
    celery_broker.delete(sub.rig.queue_name)
    blocks_report_receive(report=_blocks_report(verdict, [_block(0, 1.0), _block(1, 1.0, contention="heavy"),
                                                          _block(2, 1.0)]))  # fmt: skip
    verdict.refresh_from_db()
    assert verdict.confirmation == "pending"  # two blocks judged: the rule wants more
    (message,) = queued_messages(celery_broker, sub.rig.queue_name)
    assert (message["args"][0]["first_index"], message["args"][0]["count"]) == (2, 2)
    blocks = [_block(i, r) for i, r in zip(range(2, 8), [1.001, 0.999, 1.0, 1.002, 0.998, 1.0], strict=True)]
    for start in range(0, len(blocks), 2):
        blocks_report_receive(report=_blocks_report(verdict, blocks[start : start + 2]))
        verdict.refresh_from_db()
        if verdict.confirmation != "pending":
            break
    slow.refresh_from_db()
    assert (verdict.kind, verdict.confirmation) == ("none", "ab_refuted"), verdict.reason
    assert "not reproduced" in verdict.reason
    assert len(verdict.ab_blocks) > verdict.ab_n_pairs  # every block kept, the heavy one too
    assert slow.status == BuildStatus.BENCHMARKED and slow.accepted
    assert webhook_receiver.bodies == []


@pytest.mark.parametrize(
    ("status", "note"),
    [
        ("held_back", "A/B blocks held back: the rig was busy"),
        ("error", "A/B blocks failed: BuildError: boom"),
        ("measured", "A/B blocks failed: every block of the batch did (ServerError: no port)"),
    ],
)
def test_blocks_the_rig_could_not_measure_leave_the_first_run_standing_and_alerted(
    status: str,
    note: str,
    nightly_setup: Callable[..., Any],
    celery_broker: redis.Redis,
    webhook_receiver: WebhookReceiver,
) -> None:
    _, slow, verdict = _slow_build_pending(nightly_setup, celery_broker)
    failed = {**_block(0, 1.0), "error": "ServerError: no port"}
    report = _blocks_report(verdict, [failed if status == "measured" else _block(0, 1.0, contention="heavy")],
                            status=status)  # fmt: skip
    blocks_report_receive(report={**report, "error": "BuildError: boom"})
    verdict.refresh_from_db()
    slow.refresh_from_db()
    assert (verdict.kind, verdict.confirmation) == ("regression", Confirmation.UNCHECKED)
    assert note in verdict.reason and "the first run stands" in verdict.reason and verdict.stands
    assert slow.status == BuildStatus.BENCHMARKED
    assert AlertDelivery.objects.filter(verdict=verdict).count() == 2


def test_a_batch_that_cannot_be_sent_leaves_the_first_run_standing(
    nightly_setup: Callable[..., Any], webhook_receiver: WebhookReceiver, celery_broker: redis.Redis
) -> None:
    _, _, make_build = nightly_setup(confirm_mode="blocks")
    good = make_build("a", BASE)
    build_report_record(report=_report(good))
    slow = make_build("b", SLOW)
    previous = use_broker(CLOSED_BROKER)
    try:
        _, (verdict,) = build_report_record(report=_report(slow))
    finally:
        use_broker(previous)
    verdict.refresh_from_db()
    slow.refresh_from_db()
    assert (verdict.kind, verdict.confirmation) == ("regression", Confirmation.UNCHECKED)
    assert "A/B blocks not queued (could not reach the Celery broker" in verdict.reason
    assert slow.status == BuildStatus.BENCHMARKED
    assert len(webhook_receiver.bodies) == 1


def test_a_malformed_report_names_its_field_and_an_unknown_id_changes_nothing(
    nightly_setup: Callable[..., Any], celery_broker: redis.Redis
) -> None:
    _, _, verdict = _slow_build_pending(nightly_setup, celery_broker)
    assert blocks_report_receive(report={"confirmation_id": "vb-999999", "status": "measured"}) is None
    assert blocks_report_receive(report={"confirmation_id": "vb-x"}) is None
    blocks_report_receive(report={"confirmation_id": f"vb-{verdict.pk}", "status": "measured",
                                  "blocks": [{"index": -1}]})  # fmt: skip
    verdict.refresh_from_db()
    assert verdict.confirmation == Confirmation.UNCHECKED and "blocks.0.index" in verdict.reason

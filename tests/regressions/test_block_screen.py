"""Every step judged by A/B blocks (``Subscription.screen_every_step``): the
first run of a build is one run, minutes from its baseline's, and on a noisy
rig its noise floor lets a real step through as "no change" (b10429 on a
2-core VM, benchmarks/README.md). A subscription that screens every step holds
a no-change verdict too and asks its rig for blocks; a change the blocks find
stands (``ab_found``) and is alerted, reported and shown with the blocks'
figures; blocks that see none leave it no change, said so. Through the real
services and the real Redis broker; the blocks' figures are chosen here (real
llama-server blocks are test_ab_chain.py's)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import redis
from django.core import mail

# Registers the alert task, so an alert queued by name runs in-process (eager) here.
import leaderboard.regressions.tasks  # noqa: F401
from leaderboard.core.errors import ApplicationError
from leaderboard.regressions.management.commands.replay_releases import Command as ReplayCommand
from leaderboard.regressions.matrix import verdict_cell
from leaderboard.regressions.models import BuildStatus, Confirmation, Subscription, Verdict
from leaderboard.regressions.report import regression_report
from leaderboard.regressions.services.aa_checks import AB_RIG_TASK
from leaderboard.regressions.services.builds import build_report_record
from leaderboard.regressions.services.imports import TIMELINE_FORMAT, timeline_import
from leaderboard.regressions.tasks import ab_report
from leaderboard.regressions.words import REPRODUCES, verdict_words
from tests.fixtures.celery_worker import queued_messages
from tests.fixtures.regressions import WebhookReceiver
from tests.regressions.test_aa_checks import _block
from tests.regressions.test_verdict_blocks import BASE, _blocks_report, _locmem_email, _report  # noqa: F401

pytestmark = pytest.mark.django_db(transaction=True)

# The first run of the next release: 1% faster, within the 3% threshold, so "no change".
NEXT = [v * 1.01 for v in BASE]


def _step_judged(
    nightly_setup: Callable[..., Any], broker: redis.Redis, **sub_fields: Any
) -> tuple[Subscription, Any, Verdict]:
    """Two release builds of a subscription: the second's first run is judged no change."""
    sub, _, make_build = nightly_setup(follows="releases", **sub_fields)
    first = make_build("", BASE, commit="b10423")
    _, first_verdicts = build_report_record(report=_report(first))
    assert all(v.confirmation == Confirmation.NOT_ASKED for v in first_verdicts)  # nothing to compare with
    assert queued_messages(broker, sub.rig.queue_name) == []
    step = make_build("", NEXT, commit="b10429")
    _, (verdict,) = build_report_record(report=_report(step))
    verdict.refresh_from_db()
    step.refresh_from_db()
    return sub, step, verdict


def test_a_step_the_first_run_calls_no_change_is_judged_by_blocks_where_every_step_is_screened(
    nightly_setup: Callable[..., Any], celery_broker: redis.Redis
) -> None:
    sub, step, verdict = _step_judged(nightly_setup, celery_broker, confirm_mode="blocks", screen_every_step=True)

    assert (verdict.kind, verdict.confirmation, step.status) == ("none", "pending", BuildStatus.AB_PAIRS)
    assert -0.1 < 1.0 - verdict.effect_pct < 0.1  # the first run's +1%: within the threshold
    (message,) = queued_messages(celery_broker, sub.rig.queue_name)
    assert message["headers"]["task"] == AB_RIG_TASK
    spec = message["args"][0]
    assert (spec["a_commit"], spec["b_commit"], spec["source"]) == ("b10423", "b10429", "git")
    assert spec["confirmation_id"] == f"vb-{verdict.pk}" and (spec["first_index"], spec["count"]) == (0, 4)
    # While its blocks run the cell says so, not "no change".
    assert verdict_words(verdict).source == "nightly run, confirmation queued"


def test_slower_blocks_find_the_regression_the_first_run_missed_which_then_stands(
    nightly_setup: Callable[..., Any], celery_broker: redis.Redis, webhook_receiver: WebhookReceiver
) -> None:
    sub, step, verdict = _step_judged(nightly_setup, celery_broker, confirm_mode="blocks", screen_every_step=True)
    celery_broker.delete(sub.rig.queue_name)

    answer = ab_report(_blocks_report(verdict, [_block(i, 0.88) for i in range(4)]))

    assert answer == {"verdict": verdict.pk, "status": "ab_found"}
    verdict.refresh_from_db()
    step.refresh_from_db()
    assert (verdict.kind, verdict.confirmation, verdict.ab_design) == ("regression", "ab_found", "interleaved")
    assert verdict.stands and step.status == BuildStatus.BENCHMARKED and not step.accepted
    assert verdict.ab_effect_pct == pytest.approx(-12.0, abs=0.5)
    assert verdict.effect_pct == pytest.approx(1.0, abs=0.1)  # the first run's figure is kept, as it was
    assert verdict.reason.startswith("found by A/B:") and "the first run saw no change (+1.00%" in verdict.reason
    # Pages show the blocks' effect beside the word, never the first run's +1% beside "regression".
    cell = verdict_cell(verdict)
    assert (cell.state, cell.word) == ("regression", "regression")
    assert cell.effect_pct == verdict.ab_effect_pct and cell.p_value == verdict.ab_p_value
    assert cell.detail == "found by A/B blocks" and "A/B screen of every step (4 interleaved A/B blocks)" in cell.source
    # Alerted once, saying what found it.
    assert len(webhook_receiver.bodies) == 1 and len(mail.outbox) == 1
    text = webhook_receiver.bodies[0]["text"]
    assert "the nightly run saw no change, decode_tokens_per_s:" in text
    assert "found by 4 interleaved A/B blocks of baseline and candidate on the same rig" in text
    assert f"{verdict.ab_effect_pct:+.2f}%" in text
    (rig_answer,) = regression_report(verdict_id=verdict.pk).answers
    assert rig_answer.status == REPRODUCES and rig_answer.n_pairs == 4
    assert rig_answer.effect_pct == verdict.ab_effect_pct
    assert rig_answer.how.endswith("; found where the nightly run saw no change (+1.00%)")


def test_blocks_that_see_no_change_leave_the_step_no_change_said_so_and_nothing_alerted(
    nightly_setup: Callable[..., Any], celery_broker: redis.Redis, webhook_receiver: WebhookReceiver
) -> None:
    sub, step, verdict = _step_judged(nightly_setup, celery_broker, confirm_mode="blocks", screen_every_step=True)
    celery_broker.delete(sub.rig.queue_name)

    ab_report(_blocks_report(verdict, [_block(i, 1.0) for i in range(4)]))

    verdict.refresh_from_db()
    step.refresh_from_db()
    assert (verdict.kind, verdict.confirmation) == ("none", "ab_confirmed") and not verdict.stands
    assert step.status == BuildStatus.BENCHMARKED and step.accepted
    cell = verdict_cell(verdict)
    assert (cell.state, cell.word, cell.detail) == ("none", "no change", "no change by A/B blocks")
    assert cell.effect_pct == verdict.effect_pct  # no change: the first run's figure
    # The replay's per-release line says it in the same words (it once said "reproduced by a/b").
    line = ReplayCommand._line(10429, step)
    assert ": No change +1.0% (no change by A/B blocks); A/B " in line and "(n 4)" in line and "reproduced" not in line
    assert webhook_receiver.bodies == [] and mail.outbox == []
    assert queued_messages(celery_broker, sub.rig.queue_name) == []


@pytest.mark.parametrize(
    "fields",
    [
        {"confirm_mode": "blocks", "screen_every_step": False},  # the model's default: screens nothing
        {"confirm_mode": "ab", "screen_every_step": True},  # pairs confirm changes only
    ],
)
def test_no_change_is_not_held_unless_blocks_screen_every_step(
    nightly_setup: Callable[..., Any], celery_broker: redis.Redis, fields: dict[str, Any]
) -> None:
    sub, step, verdict = _step_judged(nightly_setup, celery_broker, **fields)

    assert (verdict.kind, verdict.confirmation, step.status) == ("none", "", BuildStatus.BENCHMARKED)
    assert queued_messages(celery_broker, sub.rig.queue_name) == []
    assert Subscription._meta.get_field("screen_every_step").default is False


def test_a_recording_says_whether_it_screened_every_step_and_a_bad_value_names_its_field(make_rig) -> None:
    rig = make_rig(name="imported-rig")
    upstream = "https://github.com/ggml-org/llama.cpp"

    def document(branch: str, **said: Any) -> dict[str, Any]:
        subscription = {"repo_url": upstream, "branch": branch, "follows": "releases", "confirm_mode": "blocks"}
        return {"format": TIMELINE_FORMAT, "subscription": {**subscription, **said}, "reference_configs": [],
                "builds": [], "runs": []}  # fmt: skip

    screened = timeline_import(rig=rig, document=document("master", screen_every_step=True))
    older = timeline_import(rig=rig, document=document("older"))
    assert screened.subscription.screen_every_step is True
    assert older.subscription.screen_every_step is False  # an older recording screened nothing
    with pytest.raises(ApplicationError) as refused:
        timeline_import(rig=rig, document=document("bad", screen_every_step="yes"))
    assert refused.value.field == "subscription.screen_every_step"

"""A/A checks through the real services: due on an idle subscribed rig, sent to
the rig's queue on the real Redis broker as an A/B of one build, judged batch by
batch as the rig reports, counted per rig with the Clopper–Pearson bound (beta
quantiles as the oracle), shown on the rig's page and the matrix, where a rig
whose checks call changes too often has its verdicts marked; the frequency set
by the owner. The blocks' figures are chosen here (the rig side is
tests/runners/test_ab_block.py)."""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
import redis
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from scipy import stats

from leaderboard.intake.models import RigOwnership
from leaderboard.regressions.matrix import matrix_url
from leaderboard.regressions.models import AaCheck, AaStatus, BuildRecord, Verdict
from leaderboard.regressions.selectors_aa import rigs_aa_summaries
from leaderboard.regressions.services.aa_checks import AB_RIG_TASK, aa_checks_due, ab_report_receive
from leaderboard.results.models import Run
from runners.ab_design import rep_order
from tests.fixtures.celery_worker import queued_messages

pytestmark = pytest.mark.django_db(transaction=True)

BASE = [100.0, 101.0, 99.0, 100.5, 99.5, 100.2, 99.8, 100.1, 99.9, 100.3]


def _block(index: int, ratio: float, *, contention: str = "quiet", reps: int = 4) -> dict[str, Any]:
    order = rep_order(index, reps)
    wiggle = [1.0, 1.004, 0.997, 1.002, 0.999, 1.003, 0.998, 1.001][index % 8]
    values = [100.0 * (ratio * wiggle if s.value == "b" else 1.0) for s in order]
    return {"index": index, "sides": [s.value for s in order], "decode_tokens_per_s": values,
            "contention": contention, "error": ""}  # fmt: skip


def _report(check: AaCheck, blocks: list[dict[str, Any]], status: str = "measured") -> dict[str, Any]:
    return {"confirmation_id": f"aa-{check.pk}", "status": status, "design": "interleaved", "error": "",
            "blocks": blocks}  # fmt: skip


@pytest.fixture
def subscribed(nightly_setup: Callable[..., Any], celery_broker: redis.Redis) -> tuple[Any, Any]:
    sub, ref, make_build = nightly_setup()
    make_build("a", BASE)
    BuildRecord.objects.filter(subscription=sub).update(status="benchmarked")
    celery_broker.delete(sub.rig.queue_name)
    return sub, ref


def test_an_idle_rig_due_a_check_gets_an_a_b_of_one_build_on_its_queue(subscribed, celery_broker) -> None:
    sub, ref = subscribed
    (check,) = aa_checks_due()
    (message,) = queued_messages(celery_broker, sub.rig.queue_name)
    assert message["headers"]["task"] == AB_RIG_TASK
    spec = message["args"][0]
    assert spec["a_commit"] == spec["b_commit"] == "a" * 40 == check.commit
    assert spec["confirmation_id"] == f"aa-{check.pk}" and spec["count"] == 4 and spec["first_index"] == 0
    # Not due again while it waits, nor within the days set.
    assert aa_checks_due() == []
    check.status = AaStatus.SETTLED
    check.save()
    assert aa_checks_due(now=timezone.now() + timedelta(days=6)) == []
    assert len(aa_checks_due(now=timezone.now() + timedelta(days=8))) == 1


def test_a_rig_building_is_not_idle_and_a_subscription_set_to_never_is_skipped(subscribed) -> None:
    sub, _ = subscribed
    BuildRecord.objects.create(subscription=sub, commit="c" * 40)  # queued: the rig is busy
    assert aa_checks_due() == []
    BuildRecord.objects.filter(commit="c" * 40).delete()
    sub.aa_every_days = 0
    sub.save()
    assert aa_checks_due() == []


def test_batches_are_judged_until_the_rule_decides_and_heavy_blocks_are_not_judged(subscribed, celery_broker) -> None:
    sub, _ = subscribed
    (check,) = aa_checks_due()
    celery_broker.delete(sub.rig.queue_name)
    ab_report_receive(report=_report(check, [_block(0, 1.0), _block(1, 1.0, contention="heavy"), _block(2, 1.0)]))
    check.refresh_from_db()
    assert check.status == AaStatus.QUEUED  # two judged blocks: the rule wants more
    (message,) = queued_messages(celery_broker, sub.rig.queue_name)
    assert message["args"][0]["first_index"] == 2 and message["args"][0]["count"] == 2
    ab_report_receive(report=_report(check, [_block(2, 1.0, contention="uneven"), _block(3, 1.0)]))
    check.refresh_from_db()
    assert check.status == AaStatus.SETTLED and check.decision == "none" and check.n_blocks == 4
    assert check.contention == "uneven" and "different contention" in check.reason
    assert len(check.blocks) == 5  # every block kept, the heavy one too
    # A duplicate delivery changes nothing.
    assert ab_report_receive(report=_report(check, [_block(4, 0.5)])) is None


def test_held_back_and_failed_batches_settle_the_check_with_the_reason(subscribed) -> None:
    sub, _ = subscribed
    (check,) = aa_checks_due()
    ab_report_receive(report=_report(check, [_block(0, 1.0, contention="heavy")], status="held_back"))
    check.refresh_from_db()
    assert check.status == AaStatus.HELD_BACK and "contention" in check.reason
    other = AaCheck.objects.create(subscription=sub, reference_config=check.reference_config, commit="a" * 40)
    ab_report_receive(report={"confirmation_id": f"aa-{other.pk}", "status": "error", "error": "BuildError: boom"})
    other.refresh_from_db()
    assert other.status == AaStatus.FAILED and other.reason == "BuildError: boom"
    assert ab_report_receive(report={"confirmation_id": "something-else"}) is None
    third = AaCheck.objects.create(subscription=sub, reference_config=check.reference_config, commit="a" * 40)
    ab_report_receive(report={"confirmation_id": f"aa-{third.pk}", "status": "measured", "blocks": [{"index": -1}]})
    third.refresh_from_db()
    assert third.status == AaStatus.FAILED and "blocks.0.index" in third.reason


def _settled(sub: Any, ref: Any, decisions: list[str]) -> None:
    for d in decisions:
        AaCheck.objects.create(subscription=sub, reference_config=ref, commit="a" * 40, status=AaStatus.SETTLED,
                               decision=d, design="interleaved", settled_at=timezone.now())  # fmt: skip


def _noisy_block(index: int, noise: list[float]) -> dict[str, Any]:
    """A block of one build on both sides: each repetition 100 × its own noise."""
    order = rep_order(index, 4)
    values = [100.0 * noise[(index * 8 + j) % len(noise)] for j in range(len(order))]
    return {"index": index, "sides": [s.value for s in order], "decode_tokens_per_s": values,
            "contention": "quiet", "error": ""}  # fmt: skip


@pytest.mark.parametrize(
    ("spread", "words"),
    [
        # Quiet noise (±0.3%): the planted 5% is caught at the first look, like the A/A settled there.
        (0.003, "a 5% slowdown planted in the B rates of its last A/A check was caught (4 blocks)"),
        # Noise of ±12% a repetition: 4 blocks cannot tell 5% (the A/A settled as inconclusive at the limit).
        (0.12, "a 5% slowdown planted in the B rates of its last A/A check was"),
    ],
)
def test_a_settled_check_is_also_a_power_check_of_a_planted_slowdown(subscribed, client, spread, words) -> None:
    sub, _ = subscribed
    sub.ab_max_pairs = 4
    sub.save()
    (check,) = aa_checks_due()
    noise = [1 + spread * math.sin(1.7 * k) for k in range(64)]
    ab_report_receive(report=_report(check, [_noisy_block(i, noise) for i in range(4)]))
    check.refresh_from_db()
    assert check.status == AaStatus.SETTLED and check.power_planted_pct == 5.0
    assert check.power_caught == (spread < 0.01), (check.decision, check.power_decision)
    summary = rigs_aa_summaries(rig_ids=[sub.rig_id])[sub.rig_id]
    assert words in summary.power_words()
    rig_page = client.get(reverse("boards:rig", args=[sub.rig_id])).content.decode()
    assert words in rig_page
    if spread > 0.01:
        assert "caught" not in summary.power_words()


def test_the_count_and_its_bounds_are_clopper_pearson(subscribed) -> None:
    sub, ref = subscribed
    _settled(sub, ref, ["none"] * 38 + ["inconclusive", "improvement"])
    summary = rigs_aa_summaries(rig_ids=[sub.rig_id])[sub.rig_id]
    assert (summary.checks, summary.called, summary.design) == (40, 1, "interleaved")
    assert summary.upper_95 == pytest.approx(stats.beta.ppf(0.95, 2, 39))
    assert summary.lower_95 == pytest.approx(stats.beta.ppf(0.05, 1, 40))
    assert not summary.exceeds_level  # 1 of 40 is no evidence against 1%
    assert rigs_aa_summaries(rig_ids=[sub.rig_id + 999])[sub.rig_id + 999].checks == 0
    assert math.isclose(stats.beta.ppf(0.95, 1, 10), 1 - 0.05 ** (1 / 10))  # the oracle's rule of three


def test_a_rig_whose_checks_call_too_many_changes_has_its_verdicts_marked(subscribed, client) -> None:
    sub, ref = subscribed
    build = BuildRecord.objects.get(subscription=sub)
    verdict = Verdict.objects.create(
        build=build, reference_config=ref, new_run=Run.objects.get(), commit_to=build.commit, kind="regression"
    )
    report_url = reverse("regressions:report", args=[verdict.pk])
    assert "weigh with care" not in client.get(report_url).content.decode()
    page = client.get(matrix_url(sub.repo_url, sub.branch)).content.decode()
    assert "weigh with care" not in page
    _settled(sub, ref, ["regression", "improvement", "none", "none", "none"])
    summary = rigs_aa_summaries(rig_ids=[sub.rig_id])[sub.rig_id]
    assert summary.exceeds_level  # 2 of 5: the lower bound is above 1%
    page = client.get(matrix_url(sub.repo_url, sub.branch)).content.decode()
    assert "2 of 5 called a change" in page and "weigh with care" in page
    assert "weigh with care" in client.get(report_url).content.decode()
    rig_page = client.get(reverse("boards:rig", args=[sub.rig_id])).content.decode()
    assert "2 of 5 called a change" in rig_page and "false alarms above the level" in rig_page


def test_the_owner_sets_how_often_and_a_bad_value_names_the_field(subscribed) -> None:
    sub, _ = subscribed
    owner = User.objects.create_user("owner", password="x")
    RigOwnership.objects.create(rig=sub.rig, owner=owner)
    sub.rig.owner = owner
    sub.rig.save()
    client = Client()
    client.force_login(owner)
    url = reverse("regressions:aa-frequency", args=[sub.pk])
    assert client.get(url).status_code == 200
    bad = client.post(url, {"aa_every_days": "-3"})
    assert bad.status_code == 400 and "aa_every_days" in bad.content.decode()
    assert client.post(url, {"aa_every_days": "30"}).status_code == 302
    sub.refresh_from_db()
    assert sub.aa_every_days == 30
    stranger = User.objects.create_user("stranger", password="x")
    client.force_login(stranger)
    assert client.post(url, {"aa_every_days": "1"}).status_code == 404

"""A confirmation's block limit sized from the rig's own A/A noise, through the
real services: the block SD pooled from its settled interleaved A/A checks
(statistics.variance as the oracle), the limit fixed on the verdict and the A/A
check when they begin, the rule held to it, an answer left inconclusive saying
what the rig can resolve, the owner setting the slowdown to size for, and the
rig's page naming its noise."""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable
from typing import Any

import pytest
import redis
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from leaderboard.intake.models import RigOwnership
from leaderboard.regressions.ab_power import BlockNoise, size_blocks
from leaderboard.regressions.models import AaCheck, AaStatus
from leaderboard.regressions.selectors_aa import NOISE_CHECKS, rigs_block_noise, subscription_block_sizing
from leaderboard.regressions.services.aa_checks import aa_check_queue
from leaderboard.regressions.services.confirmation import blocks_report_receive
from leaderboard.regressions.services.verdict_blocks import verdict_blocks_queue
from tests.regressions.test_aa_checks import _block, subscribed  # noqa: F401 (a fixture)
from tests.regressions.test_verdict_blocks import _blocks_report, _slow_build_pending

pytestmark = pytest.mark.django_db(transaction=True)

# Two A/A checks of a noisy rig: each block's B/A ratio (× the block's own wiggle, _block).
NOISY = [[1.03, 0.97, 1.04, 0.96, 1.0, 1.02], [0.98, 1.03, 0.95, 1.01, 1.04, 0.97]]


def _figure(block: dict[str, Any]) -> float:
    """ln(B/A) of a block of _block's shape (every unit the same)."""
    rates = dict(zip(block["sides"], block["decode_tokens_per_s"], strict=False))
    return math.log(rates["b"] / rates["a"])


def _aa_history(sub: Any, ref: Any, checks: list[list[float]]) -> list[list[float]]:
    figures = []
    for ratios in checks:
        blocks = [_block(i, r) for i, r in enumerate(ratios)]
        AaCheck.objects.create(subscription=sub, reference_config=ref, commit="a" * 40, status=AaStatus.SETTLED,
                               decision="none", design="interleaved", settled_at=timezone.now(),
                               blocks=blocks)  # fmt: skip
        figures.append([_figure(b) for b in blocks])
    return figures


def _expected(figures: list[list[float]]) -> BlockNoise:
    df = sum(len(f) - 1 for f in figures)
    pooled = sum((len(f) - 1) * statistics.variance(f) for f in figures) / df
    return BlockNoise(100 * math.sqrt(pooled), df, len(figures), sum(len(f) for f in figures))


def test_a_noisy_rigs_a_a_checks_size_its_next_confirmation_which_says_what_it_resolves(
    nightly_setup: Callable[..., Any], celery_broker: redis.Redis
) -> None:
    sub, slow, verdict = _slow_build_pending(nightly_setup, celery_broker)
    expected = _expected(_aa_history(sub, verdict.reference_config, NOISY))
    sizing = subscription_block_sizing(sub)
    assert sizing.noise is not None and sizing.noise.sd_pct == pytest.approx(expected.sd_pct)
    assert (sizing.noise.n_checks, sizing.noise.n_blocks) == (2, 12)
    want = size_blocks(expected, alpha=sub.alpha, threshold_pct=sub.threshold_pct, resolve_pct=2.0, floor_blocks=8)
    assert sizing.limit == want.limit > sub.ab_max_pairs  # noisier than 8 blocks can resolve 2% on

    # The verdict was held before this history existed: held again, it is sized on it.
    verdict.confirmation = ""
    verdict.save()
    celery_broker.delete(sub.rig.queue_name)
    verdict_blocks_queue(verdicts=[verdict])
    verdict.refresh_from_db()
    assert verdict.ab_block_limit == sizing.limit
    # Blocks that neither show the change nor rule it out run past the old limit of 8, to the sized one.
    ratios = [0.94, 1.01, 0.96, 0.99]  # about -2.5%: within the 3% threshold, not inside it with confidence
    sent = 0
    while verdict.confirmation == "pending" and sent <= sizing.limit:
        batch = [_block(sent + i, ratios[(sent + i) % 4]) for i in range(2 if sent else 4)]
        blocks_report_receive(report=_blocks_report(verdict, batch))
        sent += len(batch)
        verdict.refresh_from_db()
    assert verdict.confirmation == "ab_refuted" and verdict.ab_n_pairs == sizing.limit == sent, verdict.reason
    assert f"inconclusive at the limit of {sizing.limit} blocks" in verdict.reason
    assert f"rig's A/A block SD {expected.sd_pct:.2f}%" in verdict.reason
    slow.refresh_from_db()
    assert slow.accepted  # an unconfirmed change does not stand


def test_a_rigs_noise_is_pooled_over_its_last_checks_only(subscribed) -> None:  # noqa: F811
    sub, ref = subscribed
    _aa_history(sub, ref, [[1.3, 0.7, 1.4, 0.6]] * 2)  # two wild checks, then NOISE_CHECKS calm ones
    calm = _aa_history(sub, ref, [[1.01, 0.99, 1.0, 1.02], [0.98, 1.0, 1.03, 0.99]] * (NOISE_CHECKS // 2))
    noise = rigs_block_noise(rig_ids=[sub.rig_id])[sub.rig_id]
    assert (noise.n_checks, noise.n_blocks) == (NOISE_CHECKS, 4 * NOISE_CHECKS)
    assert noise.sd_pct == pytest.approx(_expected(calm).sd_pct)
    assert rigs_block_noise(rig_ids=[sub.rig_id + 1]) == {}


def test_too_few_a_a_blocks_leave_the_subscriptions_limit(subscribed, client) -> None:  # noqa: F811
    sub, ref = subscribed
    _aa_history(sub, ref, [[1.03, 0.97, 1.04]])  # 3 blocks: too few to size on
    sizing = subscription_block_sizing(sub)
    assert sizing.noise is None and sizing.limit == sub.ab_max_pairs == 8
    check = aa_check_queue(subscription=sub)
    assert check is not None
    assert check.ab_block_limit == 8


def test_the_owner_sets_the_slowdown_to_size_for_and_the_rig_page_names_its_noise(subscribed) -> None:  # noqa: F811
    sub, ref = subscribed
    figures = _aa_history(sub, ref, NOISY)
    noisy = subscription_block_sizing(sub)
    owner = User.objects.create_user("owner", password="x")
    RigOwnership.objects.create(rig=sub.rig, owner=owner)
    sub.rig.owner = owner
    sub.rig.save()
    client = Client()
    client.force_login(owner)
    url = reverse("regressions:aa-frequency", args=[sub.pk])
    page = client.get(url).content.decode()
    assert f"at most {noisy.limit} blocks" in page and f"block SD {_expected(figures).sd_pct:.2f}%" in page
    bad = client.post(url, {"aa_every_days": "7", "resolve_pct": "-1"})
    assert bad.status_code == 400 and "resolve_pct" in bad.content.decode()
    assert client.post(url, {"aa_every_days": "7", "resolve_pct": "5"}).status_code == 302
    sub.refresh_from_db()
    assert sub.resolve_pct == 5.0
    coarse = subscription_block_sizing(sub)
    assert coarse.needed is not None and coarse.limit == max(sub.ab_max_pairs, coarse.needed) < noisy.limit
    check = aa_check_queue(subscription=sub)
    assert check is not None
    assert check.ab_block_limit == coarse.limit
    rig_page = Client().get(reverse("boards:rig", args=[sub.rig_id])).content.decode()
    assert f"block SD {_expected(figures).sd_pct:.2f}%" in rig_page

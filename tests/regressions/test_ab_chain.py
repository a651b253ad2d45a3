"""A/B confirmation and its fan-out for real, on two rig workers: a commit
that really slows every decode step is judged a regression on the first rig,
confirmed there by interleaved A/B blocks (the default: the baseline's and the
candidate's servers side by side, both builds from the build cache,
repetitions alternated A B B A), bisected (a one-commit range), then checked on
the second rig of the branch, which had built neither commit, by run-level A/B
pairs (its subscription's choice); the report names the first bad commit, says
where it reproduces and which test each rig's figures come from.

Both rigs are CPU workers on this machine with the same flags, so the second
rig's two builds are build-cache hits. Cost: the nightly's builds (cached
after the first session), 3 + 1 + 2 × 4 Gemma 3 270M runs of 6 repetitions and 4 blocks of
2 × 12 repetitions, 4 tokens each (~8 min here: the slow build's pause is most of it)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from leaderboard.regressions.ab_blocks import judged_blocks, side_means
from leaderboard.regressions.models import BuildRecord, BuildStatus, ConfirmationPair, Verdict
from leaderboard.regressions.services.detection import subscription_check
from tests.fixtures.regressions import GemmaNightlyRig, Upstream, WebhookReceiver
from tests.fixtures.waiting import wait_until

pytestmark = [pytest.mark.llama, pytest.mark.celery_worker, pytest.mark.django_db(transaction=True)]

TIMEOUT_S = 50 * 60
# One look at four blocks or pairs (the whole level spent there): a 3-10x slowdown needs no more.
AB_PAIRS = 4
# Half the chains' usual tokens a repetition: the slow build pauses 300 ms a token, so the slow
# side's tokens are most of this test's time (a block's 12 slow repetitions of 8 tokens were 31 s
# of pause). A 3-10x slowdown is as plain at 4 tokens. The 6 repetitions a run stay: the first
# verdict's rule (Mann-Whitney, one run each side) cannot reach its level with 4 against 4.
WORKLOAD = {"max_tokens": 4}


def _wait(predicate: Callable[[], bool], what: str, *workers: Any, timeout_s: float = TIMEOUT_S) -> None:
    wait_until(predicate, timeout_s, what, every_s=2, detail=lambda: "\n".join(w.log()[-3000:] for w in workers))


def test_a_slowdown_is_confirmed_by_ab_blocks_and_reproduces_on_the_second_rig(
    upstream: Upstream,
    gemma_nightly_rig: Callable[..., GemmaNightlyRig],
    service_worker: None,
    webhook_receiver: WebhookReceiver,
    settings: Any,
    tmp_path: Path,
    client: Client,
) -> None:
    settings.RIGBOARD_REPO_CACHE_DIR = tmp_path / "repos"
    # This machine runs the service, a second rig and the tests beside the blocks: the rig's own limit
    # says never to hold a block back for it (contention is still measured and reported).
    one = gemma_nightly_rig(
        "ab-cpu-1", bisect=True, ab_max_pairs=AB_PAIRS, webhook_url=webhook_receiver.url,
        worker_env={"RIGBOARD_AB_HEAVY_CPU_SHARE": "1"}, workload=WORKLOAD,
    )  # fmt: skip
    two = gemma_nightly_rig("ab-cpu-2", ab_max_pairs=AB_PAIRS, confirm_mode="ab", workload=WORKLOAD)

    good = upstream.head()
    assert subscription_check(subscription=one.subscription).reason == "queued"
    _wait(lambda: Verdict.objects.filter(build__commit=good).exists(), "the first nightly", one.worker)
    slow = upstream.commit_slowdown()
    assert subscription_check(subscription=one.subscription).reason == "queued"

    def settled() -> bool:
        return Verdict.objects.filter(
            build__commit=slow, build__subscription=one.subscription, confirmation__startswith="ab_"
        ).exists()

    _wait(settled, "the A/B confirmation on the first rig", one.worker)
    # The answer commits first; what stands is acted on after it (alert, bisection, fan-out), so
    # the one-commit bisection is waited for, not read in the same instant.
    _wait(
        lambda: (
            Verdict.objects.filter(build__commit=slow, build__subscription=one.subscription)
            .exclude(first_bad_commit="")
            .exists()
        ),
        "the bisection on the first rig",
        one.worker,
        timeout_s=120,
    )
    verdict = Verdict.objects.get(build__commit=slow, build__subscription=one.subscription)
    assert (verdict.kind, verdict.confirmation) == ("regression", "ab_confirmed"), verdict.reason
    # Two servers of Gemma 270M fit here: the rig ran interleaved blocks, no pairs of runs.
    assert verdict.ab_design == "interleaved" and not verdict.pairs().exists()
    blocks = judged_blocks(verdict.ab_blocks)
    assert len(blocks) == AB_PAIRS == verdict.ab_n_pairs
    for block in blocks:
        assert "".join(block["sides"][:4]) in ("abba", "baab") and len(block["sides"]) == 24
        assert block["contention"] in ("quiet", "uneven", "unknown") and block["contention_a"]["wall_s"] > 0
    a_means, b_means = side_means(blocks, "a"), side_means(blocks, "b")
    assert all(b < a for a, b in zip(a_means, b_means, strict=True))  # the slow build, B, in every block
    assert verdict.ab_effect_pct is not None and verdict.ab_effect_pct < -3
    assert verdict.first_bad_commit == slow  # a one-commit range: bisection names it at once

    # The fan-out: the second rig builds both commits (cache hits) and runs the same pairs.
    fan = BuildRecord.objects.get(subscription=two.subscription)
    assert fan.fanout_of_id == verdict.pk and fan.commit == slow
    _wait(lambda: Verdict.objects.filter(build=fan).exists(), "the fan-out on the second rig", two.worker)
    fan.refresh_from_db()
    assert fan.status == BuildStatus.BENCHMARKED, (fan.error, two.worker.log()[-3000:])
    fan_verdict = Verdict.objects.get(build=fan)
    assert (fan_verdict.kind, fan_verdict.confirmation) == ("regression", "ab_confirmed"), fan_verdict.reason
    assert ConfirmationPair.objects.filter(build=fan).count() == AB_PAIRS

    markdown = client.get(f"/regressions/report/{verdict.pk}.md").content.decode()
    assert f"**Where**: First slow commit (bisected): {slow}. — llama : tidy decode entry point" in markdown
    assert "- CPU: reproduces on 2 of 2 rigs\n" in markdown
    assert "| ab-cpu-1 | CPU |" in markdown and "| ab-cpu-2 | CPU |" in markdown
    assert "--model" in markdown or " -m " in markdown
    assert "A/B blocks: t-test on the blocks' mean log ratios" in markdown  # the first rig's test
    assert "A/B pairs: paired t-test" in markdown  # the second rig's
    wait_until(lambda: webhook_receiver.bodies, 60, "the webhook's alert", every_s=0.5)
    (body,) = webhook_receiver.bodies
    assert body["report_url"].endswith(f"/regressions/report/{verdict.pk}/")

"""A/B confirmation and its fan-out for real, on two rig workers: a commit
that really slows every decode step is judged a regression on the first rig,
confirmed there by interleaved runs of the baseline and the candidate build
(both from the build cache, ABBA), bisected (a one-commit range), then checked
the same way on the second rig of the branch, which had built neither commit;
the report names the first bad commit and says where it reproduces.

Both rigs are CPU workers on this machine with the same flags, so the second
rig's two builds are build-cache hits. Cost: the nightly's builds (cached
after the first session) and 3 + 1 + 2 × 8 Gemma 3 270M runs."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from leaderboard.regressions.models import BuildRecord, BuildStatus, ConfirmationPair, Verdict
from leaderboard.regressions.services.detection import subscription_check
from leaderboard.results.models import Run
from tests.fixtures.regressions import GemmaNightlyRig, Upstream, WebhookReceiver
from tests.fixtures.waiting import wait_until

pytestmark = [pytest.mark.llama, pytest.mark.celery_worker, pytest.mark.django_db(transaction=True)]

TIMEOUT_S = 50 * 60
# One look at four pairs (the whole level spent there): a 3-10x slowdown needs no more.
AB_PAIRS = 4


def _wait(predicate: Callable[[], bool], what: str, *workers: Any, timeout_s: float = TIMEOUT_S) -> None:
    wait_until(predicate, timeout_s, what, every_s=2, detail=lambda: "\n".join(w.log()[-3000:] for w in workers))


def test_a_slowdown_is_confirmed_by_ab_pairs_and_reproduces_on_the_second_rig(
    upstream: Upstream,
    gemma_nightly_rig: Callable[..., GemmaNightlyRig],
    service_worker: None,
    webhook_receiver: WebhookReceiver,
    settings: Any,
    tmp_path: Path,
    client: Client,
) -> None:
    settings.RIGBOARD_REPO_CACHE_DIR = tmp_path / "repos"
    one = gemma_nightly_rig("ab-cpu-1", bisect=True, ab_max_pairs=AB_PAIRS, webhook_url=webhook_receiver.url)
    two = gemma_nightly_rig("ab-cpu-2", ab_max_pairs=AB_PAIRS)

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
    verdict = Verdict.objects.get(build__commit=slow, build__subscription=one.subscription)
    assert (verdict.kind, verdict.confirmation) == ("regression", "ab_confirmed"), verdict.reason
    pairs = list(verdict.pairs())
    assert len(pairs) == AB_PAIRS and verdict.ab_n_pairs == AB_PAIRS
    for pair in pairs:
        a_run = Run.objects.get(uuid=pair.a_run.run_uuid)
        b_run = Run.objects.get(uuid=pair.b_run.run_uuid)
        assert (a_run.stack.build, b_run.stack.build) == (good, slow)  # each side on its own binary
        assert pair.b_median < pair.a_median
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
    wait_until(lambda: webhook_receiver.bodies, 60, "the webhook's alert", every_s=0.5)
    (body,) = webhook_receiver.bodies
    assert body["report_url"].endswith(f"/regressions/report/{verdict.pk}/")

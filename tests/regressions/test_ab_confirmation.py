"""A/B confirmation, its sequential stopping, the fan-out and the report,
through the real services: pairs go to the rig's queue on the real Redis
broker, their runs are posted through the real run_create and reported like
any build report. The decode figures are chosen here (the chain on real
llama-server runs is test_ab_chain.py), so each rule's boundary can be hit."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pytest
import redis
from scipy import stats

# Registers the alert task, so an alert queued by name runs in-process (eager) here.
import leaderboard.regressions.tasks  # noqa: F401
from leaderboard.regressions.ab import Plan
from leaderboard.regressions.models import BuildRecord, Confirmation, ConfirmationPair, Subscription, Verdict
from leaderboard.regressions.services.builds import build_report_record
from tests.fixtures.celery_worker import queued_messages
from tests.fixtures.regressions import WebhookReceiver, post_run

pytestmark = pytest.mark.django_db(transaction=True)

BASE = [100.0, 101.0, 99.0, 100.5, 99.5, 100.2, 99.8, 100.1, 99.9, 100.3]
SLOW = [v * 0.90 for v in BASE]


@pytest.fixture(autouse=True)
def _locmem_email(settings: Any) -> None:
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"


def _report(build: Any, runs: list[Any]) -> dict[str, Any]:
    return {
        "build_id": build.pk,
        "status": "built",
        "error": "",
        "build": {"build_time_s": 1.0, "compiler": "cc", "log_tail": "", "binary_path": "/b", "cached": True},
        "runs": [{"build_run_id": br.pk, "status": "finished", "error": ""} for br in runs],
    }


def _slow_build_pending(nightly_setup: Callable[..., Any], broker: redis.Redis, **sub: Any) -> tuple[Any, Any, Verdict]:
    subscription, _, make_build = nightly_setup(confirm_mode="ab", **sub)
    good = make_build("a", BASE)
    build_report_record(report=_report(good, list(good.build_runs.all())))
    slow = make_build("b", SLOW)
    broker.delete(subscription.rig.queue_name)
    _, (verdict,) = build_report_record(report=_report(slow, list(slow.build_runs.all())))
    return subscription, slow, verdict


def _answer_pairs(build: Any, ratios: list[float], base: float = 100.0) -> list[Any]:
    """Post the pending pairs' runs: A around ``base``, B at ``ratio`` × A; return the runs posted."""
    pairs = list(ConfirmationPair.objects.filter(build=build, a_median__isnull=True).order_by("index"))
    assert len(pairs) == len(ratios)
    runs = []
    for pair, ratio in zip(pairs, ratios, strict=True):
        a = [base + 0.1 * i for i in range(6)]
        post_run(build, a, build_run=pair.a_run)
        post_run(build, [v * ratio for v in a], build_run=pair.b_run)
        runs += [pair.a_run, pair.b_run]
    return runs


def test_a_change_sends_the_baseline_and_the_candidate_interleaved_abba(
    nightly_setup: Callable[..., Any], celery_broker: redis.Redis
) -> None:
    sub, slow, verdict = _slow_build_pending(nightly_setup, celery_broker)

    verdict.refresh_from_db()
    assert (verdict.kind, verdict.confirmation) == ("regression", Confirmation.PENDING)
    (message,) = queued_messages(celery_broker, sub.rig.queue_name)
    runs = message["args"][0]["runs"]
    # Four pairs, A = the baseline commit's binary, B = the candidate's: A B B A A B B A.
    sides = ["A" if r.get("commit") == "a" * 40 else "B" for r in runs]
    assert "".join(sides) == "ABBAABBA"
    assert message["args"][0]["build"]["commit"] == "b" * 40
    assert ConfirmationPair.objects.filter(build=slow).count() == Plan().first_pairs


def test_a_slowdown_reproduced_by_the_pairs_is_confirmed_with_every_pair_and_alerted_with_the_report(
    nightly_setup: Callable[..., Any], webhook_receiver: WebhookReceiver, celery_broker: redis.Redis
) -> None:
    _, slow, verdict = _slow_build_pending(nightly_setup, celery_broker)
    ratios = [0.90, 0.901, 0.899, 0.9005]
    runs = _answer_pairs(slow, ratios)

    build_report_record(report=_report(slow, runs))

    verdict.refresh_from_db()
    assert (verdict.kind, verdict.confirmation) == ("regression", Confirmation.AB_CONFIRMED)
    logs = [math.log(r) for r in ratios]
    oracle = stats.ttest_1samp(logs, 0.0)
    assert verdict.ab_p_value == pytest.approx(oracle.pvalue, rel=1e-6)
    assert verdict.ab_effect_pct == pytest.approx(100 * math.expm1(sum(logs) / 4), abs=1e-6)
    assert verdict.ab_n_pairs == 4 and [p.a_first for p in verdict.pairs()] == [True, False, True, False]
    effects = [p.effect_pct for p in verdict.pairs()]
    assert effects == pytest.approx([100 * (r - 1) for r in ratios], abs=1e-6)
    (body,) = webhook_receiver.bodies
    assert "reproduced by 4 A/B pairs" in body["text"]
    assert body["report_url"].endswith(f"/regressions/report/{verdict.pk}/")
    assert "| nightly-rig | CPU |" in body["report_markdown"]


def test_an_aa_confirmation_is_not_called_a_change_and_the_build_stays_a_baseline(
    nightly_setup: Callable[..., Any], webhook_receiver: WebhookReceiver, celery_broker: redis.Redis
) -> None:
    _, slow, verdict = _slow_build_pending(nightly_setup, celery_broker)
    runs = _answer_pairs(slow, [1.004, 0.997, 1.001, 0.999])

    build_report_record(report=_report(slow, runs))

    verdict.refresh_from_db()
    slow.refresh_from_db()
    assert (verdict.kind, verdict.confirmation) == ("none", Confirmation.AB_REFUTED)
    assert verdict.ab_decision == "none" and "90% CI within ±3.0%" in verdict.reason
    assert "first run -10.00%" in verdict.reason
    assert slow.accepted and webhook_receiver.bodies == []


def test_an_inconclusive_answer_adds_pairs_and_stops_at_the_limit(
    nightly_setup: Callable[..., Any], webhook_receiver: WebhookReceiver, celery_broker: redis.Redis
) -> None:
    sub, slow, verdict = _slow_build_pending(nightly_setup, celery_broker, ab_max_pairs=8)
    noisy = [0.86, 1.03, 0.88, 1.02]  # -5% on average, but pairs 15% apart: neither a change nor none

    build_report_record(report=_report(slow, _answer_pairs(slow, noisy)))
    verdict.refresh_from_db()
    assert verdict.confirmation == Confirmation.PENDING
    assert ConfirmationPair.objects.filter(build=slow).count() == 6
    # kombu pushes on the left: the newest message comes first.
    second = queued_messages(celery_broker, sub.rig.queue_name)[0]["args"][0]["runs"]
    # The next two pairs only, still alternating: pair 4 A first, pair 5 B first.
    assert ["A" if r.get("commit") else "B" for r in second] == ["A", "B", "B", "A"]

    build_report_record(report=_report(slow, _answer_pairs(slow, [0.87, 1.02])))
    assert ConfirmationPair.objects.filter(build=slow).count() == 8
    build_report_record(report=_report(slow, _answer_pairs(slow, [0.88, 1.03])))

    verdict.refresh_from_db()
    assert (verdict.kind, verdict.confirmation, verdict.ab_decision) == ("none", "ab_refuted", "inconclusive")
    assert verdict.ab_n_pairs == 8 and "inconclusive at the limit of 8 pairs" in verdict.reason
    assert ConfirmationPair.objects.filter(build=slow).count() == 8  # nothing more queued
    assert webhook_receiver.bodies == []


def test_the_rerun_rule_stays_available_per_subscription(
    nightly_setup: Callable[..., Any], celery_broker: redis.Redis
) -> None:
    sub, _, make_build = nightly_setup(confirm_mode="rerun", confirm_runs=1)
    good = make_build("a", BASE)
    build_report_record(report=_report(good, list(good.build_runs.all())))
    slow = make_build("b", SLOW)
    celery_broker.delete(sub.rig.queue_name)
    build_report_record(report=_report(slow, list(slow.build_runs.all())))
    (message,) = queued_messages(celery_broker, sub.rig.queue_name)
    assert [r.get("commit") for r in message["args"][0]["runs"]] == [None]  # the candidate alone
    assert not ConfirmationPair.objects.exists()


def test_a_confirmed_regression_fans_out_to_the_other_rigs_and_the_report_says_where_it_reproduces(
    nightly_setup: Callable[..., Any], make_rig: Callable[..., Any], celery_broker: redis.Redis, client: Any
) -> None:
    sub, slow, verdict = _slow_build_pending(nightly_setup, celery_broker, build_flags="-DGGML_CUDA=ON")
    other_rig = make_rig(name="cpu-rig")
    other = Subscription.objects.create(rig=other_rig, repo_url=sub.repo_url, branch=sub.branch, confirm_mode="ab")
    other.reference_configs.create(name=verdict.reference_config.name, spec={})
    elsewhere = Subscription.objects.create(rig=make_rig(name="fork-rig"), repo_url=sub.repo_url, branch="fork")
    elsewhere.reference_configs.create(name="x", spec={})
    celery_broker.delete(other_rig.queue_name)

    build_report_record(report=_report(slow, _answer_pairs(slow, [0.90, 0.901, 0.899, 0.9005])))

    fan = BuildRecord.objects.get(subscription=other)
    assert fan.fanout_of == Verdict.objects.get(pk=verdict.pk) and fan.commit == "b" * 40
    assert not BuildRecord.objects.filter(subscription=elsewhere).exists()  # another branch: not asked
    (message,) = queued_messages(celery_broker, other_rig.queue_name)
    spec = message["args"][0]
    assert spec["build"]["commit"] == "b" * 40
    assert ["A" if r.get("commit") == "a" * 40 else "B" for r in spec["runs"]] == list("ABBAABBA")

    # The CPU rig's pairs show no change: the regression does not reproduce there.
    build_report_record(report=_report(fan, _answer_pairs(fan, [1.002, 0.998, 1.001, 0.999])))

    fan_verdict = Verdict.objects.get(build=fan)
    assert (fan_verdict.kind, fan_verdict.confirmation, fan_verdict.fanout_of_id) == ("none", "ab_refuted", verdict.pk)
    assert not BuildRecord.objects.filter(subscription=sub).exclude(commit__in=["a" * 40, "b" * 40]).exists()
    markdown = client.get(f"/regressions/report/{verdict.pk}/?format=md").content.decode()
    assert "- CUDA: reproduces on 1 of 1 rig\n" in markdown
    assert "- CPU: reproduces on 0 of 1 rig\n" in markdown
    assert "Does not reproduce on: cpu-rig." in markdown
    assert f"`{'a' * 10}..{'b' * 10}`" in markdown
    assert "| nightly-rig | CUDA |" in markdown and "| cpu-rig | CPU |" in markdown
    assert "llama-server -m" in markdown and "--port" not in markdown and "llama-bench -m" in markdown
    assert "localhost:${PORT:-8080}/completion" in markdown
    # The same Markdown at its own address and on the page; a fan-out verdict gives its origin's report.
    assert client.get(f"/regressions/report/{verdict.pk}.md").content.decode() == markdown
    page = client.get(f"/regressions/report/{fan_verdict.pk}/").content.decode()
    assert "reproduces on 1 of 1 rig" in page and "cpu-rig" in page


def test_the_report_of_no_regression_is_not_found(nightly_setup: Callable[..., Any], client: Any) -> None:
    _, _, make_build = nightly_setup()
    good = make_build("a", BASE)
    _, (verdict,) = build_report_record(report=_report(good, list(good.build_runs.all())))
    assert client.get(f"/regressions/report/{verdict.pk}/").status_code == 404
    assert client.get("/regressions/report/999999/").status_code == 404

"""The rig's build report: build records, verdicts against the baseline, and
alerts (webhook to a local receiver with a retry, email through locmem)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.core import mail

from leaderboard.regressions.models import AlertDelivery, AlertStatus, BaselineMode, BuildRecord, BuildStatus, Verdict
from leaderboard.regressions.services.alerts import alert_attempt
from leaderboard.regressions.services.builds import build_report_record
from leaderboard.regressions.tasks import deliver_alert
from tests.fixtures.celery_worker import queued_messages
from tests.fixtures.regressions import Upstream, WebhookReceiver, post_run

pytestmark = pytest.mark.django_db(transaction=True)

BASE = [100.0, 101.0, 99.0, 100.5, 99.5, 100.2, 99.8, 100.1, 99.9, 100.3]


@pytest.fixture(autouse=True)
def _locmem_email(settings: Any) -> None:
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"


def _report(build: Any, status: str = "built", **build_fields: Any) -> dict[str, Any]:
    return {
        "build_id": build.pk,
        "status": status,
        "error": "",
        "build": {"build_time_s": 321.5, "compiler": "c++ (Debian 12.2.0-14) 12.2.0", "log_tail": "[100%] Built",
                  "binary_path": "/cache/llama-server", "cached": False, **build_fields},
        "runs": [{"build_run_id": br.pk, "status": "finished", "error": ""} for br in build.build_runs.all()],
    }  # fmt: skip


def test_a_first_build_is_recorded_with_no_baseline_and_no_alert(
    nightly_setup: Callable[..., Any], webhook_receiver: WebhookReceiver
) -> None:
    _, _, make_build = nightly_setup()
    build = make_build("a", BASE)

    stored, verdicts = build_report_record(report=_report(build))

    assert stored.status == BuildStatus.BENCHMARKED and stored.accepted
    assert (stored.build_time_s, stored.compiler) == (321.5, "c++ (Debian 12.2.0-14) 12.2.0")
    assert [v.kind for v in verdicts] == ["none"]
    assert verdicts[0].reason.startswith("no earlier accepted build")
    assert webhook_receiver.bodies == [] and mail.outbox == []


def test_a_slow_build_is_a_regression_with_range_link_and_one_alert_per_channel_despite_a_retry(
    nightly_setup: Callable[..., Any], webhook_receiver: WebhookReceiver
) -> None:
    _, _, make_build = nightly_setup()
    good = make_build("a", BASE)
    build_report_record(report=_report(good))
    webhook_receiver.fail_first = 1
    slow = make_build("b", [v * 0.95 for v in BASE])

    stored, verdicts = build_report_record(report=_report(slow))

    (verdict,) = verdicts
    assert verdict.kind == "regression" and not stored.accepted
    assert verdict.effect_pct == pytest.approx(-5.0, abs=0.01)
    assert verdict.p_value is not None and verdict.p_value < 0.01
    assert (verdict.commit_from, verdict.commit_to) == ("a" * 40, "b" * 40)
    assert verdict.compare_url == f"https://github.com/ggml-org/llama.cpp/compare/{'a' * 40}...{'b' * 40}"
    assert list(verdict.baseline_runs.values_list("stack__build", flat=True)) == ["a" * 40]
    # The webhook answered 503 once, then 200: one body received, two attempts recorded.
    assert webhook_receiver.statuses == [503, 200]
    (body,) = webhook_receiver.bodies
    assert "regression on nightly-rig" in body["text"] and body["content"] == body["text"]
    assert body["verdict"]["compare_url"] == verdict.compare_url
    assert len(mail.outbox) == 1 and mail.outbox[0].to == ["ops@example.com"]
    assert "-5.00%" in mail.outbox[0].body
    webhook = AlertDelivery.objects.get(verdict=verdict, channel="webhook")
    assert (webhook.status, webhook.attempts) == (AlertStatus.SENT, 2)

    # Judged again (a re-sent report) and the task re-run: nothing is sent twice.
    build_report_record(report=_report(slow))
    deliver_alert.delay(webhook.pk)
    alert_attempt(delivery_id=webhook.pk)
    assert len(webhook_receiver.bodies) == 1 and len(mail.outbox) == 1
    assert AlertDelivery.objects.filter(verdict__build=slow).count() == 2
    assert Verdict.objects.filter(build=slow).count() == 1


def test_the_same_build_measured_twice_is_not_flagged(nightly_setup: Callable[..., Any]) -> None:
    _, _, make_build = nightly_setup()
    build_report_record(report=_report(make_build("a", BASE)))
    again = make_build("b", [v + 0.05 for v in reversed(BASE)])
    _, (verdict,) = build_report_record(report=_report(again))
    assert verdict.kind == "none"


def test_a_one_percent_change_is_not_flagged_and_a_speedup_is_an_improvement(nightly_setup: Callable[..., Any]) -> None:
    _, _, make_build = nightly_setup()
    build_report_record(report=_report(make_build("a", BASE)))
    _, (small,) = build_report_record(report=_report(make_build("b", [v * 0.99 for v in BASE])))
    _, (fast,) = build_report_record(report=_report(make_build("c", [v * 1.08 for v in BASE])))
    assert small.kind == "none"
    assert fast.kind == "improvement" and AlertDelivery.objects.count() == 0


def test_a_failed_build_is_recorded_with_its_log_and_is_no_regression(
    nightly_setup: Callable[..., Any], webhook_receiver: WebhookReceiver
) -> None:
    _, _, make_build = nightly_setup()
    build_report_record(report=_report(make_build("a", BASE)))
    broken = make_build("b", [], status="failed")

    stored, verdicts = build_report_record(
        report=_report(broken, "failed", log_tail="error: 'foo' was not declared", binary_path="")
    )

    assert stored.status == BuildStatus.FAILED and verdicts == []
    assert "was not declared" in stored.log_tail
    assert not Verdict.objects.filter(build=broken).exists() and webhook_receiver.bodies == []


def test_runs_with_another_configuration_are_not_compared(nightly_setup: Callable[..., Any]) -> None:
    _, _, make_build = nightly_setup()
    build_report_record(report=_report(make_build("a", BASE, configuration={"ctx_size": 8192})))
    _, (verdict,) = build_report_record(report=_report(make_build("b", [v * 0.5 for v in BASE])))
    assert verdict.kind == "none" and verdict.baseline_build is None


def test_the_median_of_the_last_builds_ignores_one_odd_baseline_build(nightly_setup: Callable[..., Any]) -> None:
    _, _, make_build = nightly_setup(baseline_mode=BaselineMode.MEDIAN_OF_LAST_N, baseline_builds=3)
    build_report_record(report=_report(make_build("a", BASE)))
    build_report_record(report=_report(make_build("b", [v * 1.001 for v in BASE])))
    build_report_record(report=_report(make_build("c", [v * 1.2 for v in BASE])))  # an odd fast one
    _, (verdict,) = build_report_record(report=_report(make_build("d", [v * 0.999 for v in BASE])))
    assert verdict.kind == "none" and verdict.baseline_build is not None
    assert verdict.baseline_build.commit in ("a" * 40, "b" * 40)


def test_an_alert_is_given_up_after_the_last_attempt(
    nightly_setup: Callable[..., Any], webhook_receiver: WebhookReceiver, settings: Any
) -> None:
    settings.RIGBOARD_ALERT_MAX_ATTEMPTS = 2
    webhook_receiver.fail_first = 10
    _, _, make_build = nightly_setup(alert_emails="")
    build_report_record(report=_report(make_build("a", BASE)))
    build_report_record(report=_report(make_build("b", [v * 0.9 for v in BASE])))
    delivery = AlertDelivery.objects.get()
    assert (delivery.status, delivery.attempts) == (AlertStatus.FAILED, 2)
    assert "503" in delivery.last_error and webhook_receiver.bodies == []


def test_bisection_builds_midpoints_until_it_names_the_first_slow_commit(
    nightly_setup: Callable[..., Any], small_upstream: Upstream, celery_broker: Any, settings: Any, tmp_path: Any
) -> None:
    """The rig's midpoint runs are posted here through the real ingest (what the
    rig would measure: the slowdown from commit 5 on); git and the queue are real."""
    settings.RIGBOARD_REPO_CACHE_DIR = tmp_path / "repos"
    commits = [small_upstream.head()]
    for i in range(1, 8):
        commits.append(small_upstream.commit_file(f"f{i}.txt", str(i), f"change {i}", f"2026-03-0{i}T00:00:00+00:00"))
    first_slow = commits[5]
    sub, ref, make_build = nightly_setup(repo_url=small_upstream.url, bisect=True, webhook_url="", alert_emails="")
    good = make_build("x", BASE, commit=commits[0])
    build_report_record(report=_report(good))
    bad = make_build("x", [v * 0.9 for v in BASE], commit=commits[7])

    _, (verdict,) = build_report_record(report=_report(bad))

    visited = []
    for _ in range(5):
        verdict.refresh_from_db()
        if verdict.bisect_status != "running":
            break
        midpoint = BuildRecord.objects.get(bisect_of=verdict, status=BuildStatus.QUEUED)
        visited.append(commits.index(midpoint.commit))
        slow = commits.index(midpoint.commit) >= commits.index(first_slow)
        post_run(midpoint, [v * 0.9 for v in BASE] if slow else [v * 1.001 for v in BASE])
        build_report_record(report=_report(midpoint))
    verdict.refresh_from_db()
    assert verdict.bisect_status == "done" and verdict.first_bad_commit == first_slow
    assert visited == [4, 6, 5]
    assert BuildRecord.objects.get(commit=commits[4]).accepted  # a midpoint never changes the baseline flag
    assert len(queued_messages(celery_broker, "rig.nightly-rig")) == 3

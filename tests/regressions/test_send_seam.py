"""The one seam of a confirmation: send to the rig after commit, or settle and
act. With the rig's broker unreachable (nothing listens on port 1), a change
in either confirmation mode cannot be checked, so its first run's verdict
stands, and a regression that stands is acted on (alerted) like any other.

The broker is real Redis where it is reachable (the good build's report) and a
closed port where it is not: the send fails as it fails in production."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import redis
from django.core import mail

# Registers the alert task, so an alert queued by name runs in-process (eager) here.
import leaderboard.regressions.tasks  # noqa: F401
from leaderboard.regressions.models import AlertDelivery, BuildStatus, Confirmation
from leaderboard.regressions.services.builds import build_report_record
from tests.fixtures.celery_worker import use_broker
from tests.fixtures.regressions import WebhookReceiver

pytestmark = pytest.mark.django_db(transaction=True)

BASE = [100.0, 101.0, 99.0, 100.5, 99.5, 100.2, 99.8, 100.1, 99.9, 100.3]
SLOW = [v * 0.90 for v in BASE]
CLOSED_BROKER = "redis://127.0.0.1:1/0"


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


@pytest.mark.parametrize(
    ("mode", "note"),
    [
        ("rerun", "re-run not queued (could not reach the Celery broker"),
        ("ab", "A/B pairs not queued (could not reach the Celery broker"),
    ],
)
def test_a_regression_whose_confirmation_cannot_be_sent_stands_and_is_alerted(
    mode: str,
    note: str,
    nightly_setup: Callable[..., Any],
    webhook_receiver: WebhookReceiver,
    celery_broker: redis.Redis,
) -> None:
    _, _, make_build = nightly_setup(confirm_mode=mode, confirm_runs=1)
    good = make_build("a", BASE)
    build_report_record(report=_report(good, list(good.build_runs.all())))
    slow = make_build("b", SLOW)
    first_runs = list(slow.build_runs.all())
    previous = use_broker(CLOSED_BROKER)
    try:
        _, (verdict,) = build_report_record(report=_report(slow, first_runs))
    finally:
        use_broker(previous)

    verdict.refresh_from_db()
    slow.refresh_from_db()
    assert (verdict.kind, verdict.confirmation) == ("regression", Confirmation.UNCHECKED)
    assert note in verdict.reason
    assert verdict.stands
    assert slow.status == BuildStatus.BENCHMARKED and not slow.accepted
    # Every confirmation run made for the send is failed with the broker's error: none awaits the rig.
    extra = slow.build_runs.exclude(pk__in=[br.pk for br in first_runs])
    assert extra.exists()
    assert {(br.status, "could not reach the Celery broker" in br.error) for br in extra} == {("failed", True)}
    # Acted on like any regression that stands: one alert per channel, sent.
    assert len(webhook_receiver.bodies) == 1
    assert len(mail.outbox) == 1
    assert AlertDelivery.objects.filter(verdict=verdict).count() == 2

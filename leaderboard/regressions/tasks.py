"""Service-side Celery tasks for nightly regression, as thin as views: the
nightly check (scheduled by celery beat, PeriodicTask "nightly regression"),
the rig's build report, and alert delivery with retries."""

from __future__ import annotations

import logging
import time
from typing import Any

from celery import Task, shared_task

from leaderboard.regressions.models import Subscription
from leaderboard.regressions.services.aa_checks import AB_REPORT_TASK, aa_checks_due, ab_report_receive
from leaderboard.regressions.services.alerts import DELIVER_ALERT_TASK, AlertSendError, alert_attempt
from leaderboard.regressions.services.builds import build_report_record
from leaderboard.regressions.services.confirmation import blocks_report_receive
from leaderboard.regressions.services.detection import (
    BUILD_REPORT_TASK,
    NIGHTLY_TASK,
    subscription_check,
    subscriptions_check_all,
)
from leaderboard.regressions.services.verdict_blocks import VERDICT_PREFIX

RETRY_BASE_S = 30
IN_TASK_PAUSES_S = (1.0, 2.0)

logger = logging.getLogger(__name__)


@shared_task(name=NIGHTLY_TASK, ignore_result=True, time_limit=600, soft_time_limit=540)
def nightly_check(subscription_ids: list[int] | None = None) -> list[dict[str, Any]]:
    """Check the given subscriptions (all active ones by default) for a new head."""
    if subscription_ids:
        subs = Subscription.objects.filter(pk__in=subscription_ids).select_related("rig")
        results = [subscription_check(subscription=s) for s in subs]
    else:
        results = subscriptions_check_all()
        # Once a day is "occasionally": idle rigs due an A/A check get one.
        aa_checks_due()
    return [
        {
            "subscription": r.subscription_id,
            "head": r.head,
            "build": r.build.pk if r.build else None,
            "reason": r.reason,
        }
        for r in results
    ]


@shared_task(name=BUILD_REPORT_TASK, ignore_result=True, time_limit=300, soft_time_limit=240)
def build_report(report: dict[str, Any]) -> dict[str, Any]:
    """Record a rig's build report and judge its runs (sent by runners/builds/nightly.py)."""
    build, verdicts = build_report_record(report=report)
    return {"build": build.pk, "status": build.status, "verdicts": [v.kind for v in verdicts]}


@shared_task(name=AB_REPORT_TASK, ignore_result=True, time_limit=300, soft_time_limit=240)
def ab_report(report: dict[str, Any]) -> dict[str, Any]:
    """Record one batch of A/B blocks and judge them (sent by runners/builds/ab_task.py):
    a verdict's confirmation (``vb-`` ids) or an A/A check's (``aa-``)."""
    if str(report.get("confirmation_id") or "").startswith(VERDICT_PREFIX):
        verdict = blocks_report_receive(report=report)
        return {"verdict": verdict.pk if verdict else None, "status": verdict.confirmation if verdict else "ignored"}
    check = ab_report_receive(report=report)
    return {"aa_check": check.pk if check else None, "status": check.status if check else "ignored"}


@shared_task(bind=True, name=DELIVER_ALERT_TASK, ignore_result=True, max_retries=8, time_limit=120, soft_time_limit=100)
def deliver_alert(self: Task, delivery_id: int) -> str:
    """Send one alert. A brief outage is retried in the task (after 1 s, then
    2 s); a longer one is handed back to Celery with exponential back-off
    (30 s, 60 s, …) until the delivery's attempts run out. Return its status."""
    for pause_s in IN_TASK_PAUSES_S:
        try:
            return alert_attempt(delivery_id=delivery_id).status
        except AlertSendError as exc:
            error = exc
            time.sleep(pause_s)
    try:
        return alert_attempt(delivery_id=delivery_id).status
    except AlertSendError as exc:
        error = exc
    if self.request.is_eager:
        # No worker to retry later (the embedded default): the delivery stays
        # pending with its error, for the next run of this task.
        logger.warning("alert %s still pending after %s", delivery_id, error)
        return "pending"
    raise self.retry(exc=error, countdown=RETRY_BASE_S * 2**self.request.retries)

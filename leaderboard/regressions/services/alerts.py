"""Alerts on a regression: a webhook (JSON with both ``text`` for Slack and
``content`` for Discord) and an email through Django's email backend.

One AlertDelivery row per verdict and channel (unique), locked while it is
sent: a retried task, a re-run evaluation or two workers at once never send
the same verdict's alert twice. A failed attempt is counted and retried by the
task until RIGBOARD_ALERT_MAX_ATTEMPTS, then marked failed."""

from __future__ import annotations

import logging

import requests
from django.conf import settings
from django.core.mail import send_mail
from django.db import transaction
from django.urls import reverse
from django.utils import timezone

from leaderboard.celery import app as celery_app
from leaderboard.regressions.models import (
    AlertChannel,
    AlertDelivery,
    AlertStatus,
    Confirmation,
    Verdict,
    VerdictKind,
)
from leaderboard.regressions.report import regression_report
from leaderboard.regressions.report_md import report_markdown, report_url
from leaderboard.regressions.words import verdict_words

logger = logging.getLogger(__name__)

WEBHOOK_TIMEOUT_S = 10.0
# The task that sends one delivery (leaderboard/regressions/tasks.py).
DELIVER_ALERT_TASK = "regressions.deliver_alert"


class AlertSendError(RuntimeError):
    """One attempt failed; the task retries it."""


def alert_message(verdict: Verdict) -> str:
    """Return the one-paragraph alert text for ``verdict``."""
    build = verdict.build
    sub = build.subscription
    timeline = settings.RIGBOARD_PUBLIC_URL.rstrip("/") + reverse(
        "regressions:timeline", kwargs={"subscription_id": sub.pk, "reference_id": verdict.reference_config_id}
    )
    rng = f"{verdict.commit_from[:10]}..{verdict.commit_to[:10]}" if verdict.commit_from else verdict.commit_to[:10]
    p_value = verdict.p_value if verdict.p_value is not None else float("nan")
    evidence = verdict_words(verdict).evidence
    # Where A/B blocks found what the nightly run did not, its figures are the run's, not the change's.
    first_run = "the nightly run saw no change, " if verdict.confirmation == Confirmation.AB_FOUND else ""
    lines = [
        f"Rigboard: {verdict.get_kind_display().lower()} on {sub.rig.name} ({verdict.reference_config.name})",
        f"{first_run}{verdict.metric}: {verdict.baseline_median or 0:.2f} -> {verdict.new_median or 0:.2f} "
        f"({verdict.effect_pct or 0:+.2f}%, p={p_value:.2g}, n={verdict.n_new} vs {verdict.n_baseline}; "
        f"{verdict.noise.describe()})",
        *([evidence] if evidence else []),
        *([f"first slow commit (bisected): {verdict.first_bad_commit}"] if verdict.first_bad_commit else []),
        f"commits {rng} on {sub.branch}" + (f": {verdict.compare_url}" if verdict.compare_url else ""),
        f"timeline: {timeline}",
        *([f"report: {report_url(verdict.pk)}"] if verdict.kind == VerdictKind.REGRESSION else []),
    ]
    return "\n".join(lines)


def webhook_body(verdict: Verdict) -> dict[str, object]:
    text = alert_message(verdict)
    return {
        "text": text,  # Slack
        "content": text[:2000],  # Discord (2000-character limit)
        "verdict": {
            "id": verdict.pk,
            "kind": verdict.kind,
            "rig": verdict.build.subscription.rig.name,
            "reference_config": verdict.reference_config.name,
            "metric": verdict.metric,
            "effect_pct": verdict.effect_pct,
            "p_value": verdict.p_value,
            "confirmation": verdict.confirmation,
            "confirm_effect_pct": verdict.confirm_effect_pct,
            "threshold_pct": verdict.threshold_pct,
            "noise_floor_pct": verdict.noise_floor_pct,
            "commit_from": verdict.commit_from,
            "commit_to": verdict.commit_to,
            "compare_url": verdict.compare_url,
        },
        **_report_fields(verdict),
    }


def _report_fields(verdict: Verdict) -> dict[str, object]:
    """Return the report's link and Markdown for a regression (regressions/report.py), else nothing."""
    if verdict.kind != VerdictKind.REGRESSION:
        return {}
    markdown = report_markdown(regression_report(verdict_id=verdict.pk))
    return {"report_url": report_url(verdict.pk), "report_markdown": markdown}


def alerts_create_for(*, verdict: Verdict) -> list[AlertDelivery]:
    """Create the pending deliveries the subscription asks for (webhook, email);
    existing ones are returned as they are. Return all of them."""
    sub = verdict.build.subscription
    wanted = []
    if sub.webhook_url:
        wanted.append((AlertChannel.WEBHOOK, sub.webhook_url))
    if sub.email_recipients():
        wanted.append((AlertChannel.EMAIL, ",".join(sub.email_recipients())))
    out = []
    for channel, target in wanted:
        delivery, _ = AlertDelivery.objects.get_or_create(verdict=verdict, channel=channel, defaults={"target": target})
        out.append(delivery)
    return out


def alerts_queue_for(*, verdict: Verdict) -> list[AlertDelivery]:
    """Create the deliveries for ``verdict`` and queue a send task for each
    still pending (after commit). Return the deliveries."""
    deliveries = alerts_create_for(verdict=verdict)
    for delivery in deliveries:
        if delivery.status == AlertStatus.PENDING:
            # By name, as every other task is queued: the task module imports
            # this one. A signature of a registered task runs in-process when
            # there is no broker (eager), as ``deliver_alert.delay`` would.
            transaction.on_commit(celery_app.signature(DELIVER_ALERT_TASK, args=(delivery.pk,)).delay)
    return deliveries


def _send(delivery: AlertDelivery) -> None:
    verdict = delivery.verdict
    if delivery.channel == AlertChannel.WEBHOOK:
        try:
            response = requests.post(delivery.target, json=webhook_body(verdict), timeout=WEBHOOK_TIMEOUT_S)
        except requests.RequestException as exc:
            raise AlertSendError(f"webhook unreachable: {exc}") from exc
        if response.status_code >= 300:
            raise AlertSendError(f"webhook answered {response.status_code}: {response.text[:200]}")
        return
    subject = alert_message(verdict).splitlines()[0]
    try:
        send_mail(subject, alert_message(verdict), None, delivery.target.split(","), fail_silently=False)
    except Exception as exc:  # SMTP and backend errors alike: count the attempt, retry
        raise AlertSendError(f"email failed: {exc}") from exc


def alert_attempt(*, delivery_id: int) -> AlertDelivery:
    """Make one attempt at sending a delivery unless it is already sent or
    given up. Return the delivery; raise AlertSendError if this attempt failed
    and more attempts are allowed."""
    with transaction.atomic():
        # The row lock is held during the send so a second worker waits and then
        # finds it sent, instead of sending it again.
        delivery = AlertDelivery.objects.select_for_update().select_related("verdict").get(pk=delivery_id)
        if delivery.status != AlertStatus.PENDING:
            return delivery
        delivery.attempts += 1
        try:
            _send(delivery)
        except AlertSendError as exc:
            delivery.last_error = str(exc)
            if delivery.attempts >= settings.RIGBOARD_ALERT_MAX_ATTEMPTS:
                delivery.status = AlertStatus.FAILED
            delivery.save(update_fields=["attempts", "last_error", "status"])
            if delivery.status == AlertStatus.FAILED:
                logger.error("alert %s given up after %s attempts: %s", delivery.pk, delivery.attempts, exc)
                return delivery
            error = exc
        else:
            delivery.status = AlertStatus.SENT
            delivery.sent_at = timezone.now()
            delivery.last_error = ""
            delivery.save(update_fields=["attempts", "last_error", "status", "sent_at"])
            return delivery
    raise error

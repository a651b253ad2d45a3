"""Confirmation: a change is re-run before it stands.

A verdict that calls a build's run a regression or an improvement is
*pending* while the rig runs that reference config again on the same build
(cached by commit, so nothing is rebuilt), ``Subscription.confirm_runs``
times. Each re-run is judged against the same baseline run with the same rule
and noise floor. The change stands (alerts, bisection, the build no longer a
baseline) only if every re-run shows the same change; otherwise the verdict
becomes "no change", refuted, with both figures in its reason.

Why: the noise floor is measured on run medians, and one outlier run — a
noisy neighbour for a minute, a frequency dip — lands beyond it now and then
(1 of 137 A/A pairs in nightly order on a shared 2-core VM, benchmarks/README.md).
Such an outlier has to happen twice in a row, on the same side, to alarm.
Regression trackers do the same before blaming a commit (Perfherder's
retriggers, Chromium's Pinpoint).

That is the ``rerun`` confirm mode. The default, ``ab``, runs the baseline
build beside the candidate instead (services/ab_confirmation.py), which a slow
spell or a speed step between the two nights cannot fool; this module routes
a build to one or the other, and a regression confirmed by A/B is fanned out
to the branch's other rigs."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence

from django.db import transaction
from django.db.models import Max

from leaderboard.regressions.models import (
    BuildRecord,
    BuildRun,
    Confirmation,
    ConfirmationPair,
    ConfirmMode,
    Verdict,
    VerdictKind,
)
from leaderboard.regressions.services.ab_confirmation import ab_queue, ab_settle, fanout_queue
from leaderboard.regressions.services.alerts import alerts_queue_for
from leaderboard.regressions.services.bisect import bisect_start
from leaderboard.regressions.services.detection import build_send
from leaderboard.regressions.verdict import Outcome, Rule, judge
from leaderboard.results.models import Run, RunStatus

logger = logging.getLogger(__name__)


def confirmation_queue(*, build: BuildRecord, verdicts: Sequence[Verdict]) -> list[Verdict]:
    """Mark the build's change verdicts pending and queue their re-runs (one
    job to the rig, sent once committed). Return the verdicts marked; none
    when the subscription confirms nothing, the build is a bisection midpoint,
    or no verdict is a change."""
    confirm_runs = build.subscription.confirm_runs
    todo = [v for v in verdicts if v.kind != VerdictKind.NONE and not v.confirmation]
    if not todo or build.bisect_of_id is not None or build.fanout_of_id is not None:
        return []
    if build.subscription.confirm_mode == ConfirmMode.AB:
        return ab_queue(build=build, verdicts=todo)
    if confirm_runs == 0:
        return []
    with transaction.atomic():
        for verdict in todo:
            ref = verdict.reference_config
            last = BuildRun.objects.filter(build=build, reference_config=ref).aggregate(last=Max("repeat"))["last"]
            BuildRun.objects.bulk_create(
                BuildRun(build=build, reference_config=ref, repeat=(last or 0) + 1 + k, confirms=True)
                for k in range(confirm_runs)
            )
            verdict.confirmation = Confirmation.PENDING
            verdict.save(update_fields=["confirmation"])
        build.celery_task_id = str(uuid.uuid4())
        build.save(update_fields=["celery_task_id"])
        transaction.on_commit(lambda: _send(build.pk))
    return todo


def _send(build_id: int) -> None:
    build = BuildRecord.objects.select_related("subscription__rig").get(pk=build_id)
    if build_send(build):
        return
    # No re-run will come: the first runs' verdicts stand, and say why.
    for verdict in build.verdicts.filter(confirmation=Confirmation.PENDING):
        _settle(verdict, Confirmation.UNCHECKED, f"re-run not queued ({build.error[:80]}); the first run stands")
    build.build_runs.filter(confirms=True, status="").update(status="failed", error=build.error)
    standing_changes_act_on(build=build, verdicts=list(build.verdicts.all()))


def standing_changes_act_on(*, build: BuildRecord, verdicts: Sequence[Verdict]) -> None:
    """Alert on (and, if the subscription says so, bisect) each regression that
    stands: confirmed, or needing no confirmation; one confirmed by A/B pairs
    is also checked on the branch's other rigs (fan-out). All idempotent. A
    fan-out verdict is an answer for the report, acted on by none of these."""
    for verdict in verdicts:
        if verdict.kind == VerdictKind.REGRESSION and verdict.stands and verdict.fanout_of_id is None:
            if verdict.confirmation == Confirmation.AB_CONFIRMED:
                fanout_queue(verdict=verdict)
            alerts_queue_for(verdict=verdict)
            if build.subscription.bisect:
                bisect_start(verdict=verdict)


def confirmation_settle(*, build: BuildRecord) -> list[Verdict]:
    """Judge the reported re-runs of the build's pending verdicts and settle
    them (confirmed, refuted, or unchecked when no re-run finished); a verdict
    whose re-runs are not all reported stays pending. Recompute whether the
    build is accepted. A build with A/B pairs is judged by them instead
    (services/ab_confirmation.py). Return all the build's verdicts."""
    if ConfirmationPair.objects.filter(build=build).exists():
        verdicts = ab_settle(build=build)
        if build.bisect_of_id is None and build.fanout_of_id is None:
            build.accepted = not any(v.kind == VerdictKind.REGRESSION for v in verdicts)
            build.save(update_fields=["accepted"])
        return verdicts
    verdicts = list(build.verdicts.select_related("reference_config").order_by("id"))
    for verdict in verdicts:
        if verdict.confirmation == Confirmation.PENDING:
            _judge_reruns(build, verdict)
    if build.bisect_of_id is None:
        build.accepted = not any(v.kind == VerdictKind.REGRESSION for v in verdicts)
        build.save(update_fields=["accepted"])
    return verdicts


def _judge_reruns(build: BuildRecord, verdict: Verdict) -> None:
    reruns = list(BuildRun.objects.filter(build=build, reference_config=verdict.reference_config, confirms=True))
    if any(not br.status for br in reruns):
        return
    finished = (
        Run.objects.filter(uuid__in=[br.run_uuid for br in reruns], status=RunStatus.FINISHED)
        .prefetch_related("samples")
        .order_by("started_at")
    )
    baseline = verdict.baseline_runs.prefetch_related("samples").first()
    if baseline is None:
        _settle(verdict, Confirmation.UNCHECKED, "no baseline run left to re-judge against; the first run stands")
        return
    rule = Rule(alpha=verdict.alpha, threshold_pct=verdict.threshold_pct, noise_k=verdict.noise_k)
    baseline_samples = baseline.decode_samples()
    outcomes = [judge(run.decode_samples(), baseline_samples, rule, verdict.noise) for run in finished]
    if not outcomes:
        _settle(verdict, Confirmation.UNCHECKED, "the re-run did not finish; the first run stands")
        return
    effects = [o.effect_pct for o in outcomes if o.effect_pct is not None]
    verdict.confirm_effect_pct = min(effects, key=abs, default=None)
    if all(o.kind.value == verdict.kind for o in outcomes):
        _settle(verdict, Confirmation.CONFIRMED, f"reproduced by {_reruns(outcomes)}")
        return
    first = f"first run {verdict.effect_pct or 0:+.2f}%, p={verdict.p_value or 0:.2g}"
    dissent = next(o for o in outcomes if o.kind.value != verdict.kind)
    verdict.kind = VerdictKind.NONE
    verdict.reason = f"not reproduced by {_reruns(outcomes)}: {dissent.reason}; {first}"[:300]
    verdict.confirmation = Confirmation.REFUTED
    verdict.save(update_fields=["kind", "reason", "confirmation", "confirm_effect_pct"])


def _reruns(outcomes: Sequence[Outcome]) -> str:
    effects = ", ".join(f"{o.effect_pct:+.2f}%" for o in outcomes if o.effect_pct is not None)
    return f"{len(outcomes)} re-run{'s' if len(outcomes) > 1 else ''} ({effects})"


def _settle(verdict: Verdict, confirmation: Confirmation, note: str) -> None:
    verdict.confirmation = confirmation
    verdict.reason = f"{verdict.reason[: 296 - len(note)]}; {note}"[:300]
    verdict.save(update_fields=["confirmation", "reason", "confirm_effect_pct"])

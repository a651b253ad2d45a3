"""Re-run confirmation (``confirm_mode`` re-run): a change is re-run before it stands.

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

This module only adds the re-runs and judges them; services/confirmation.py
routes a build here or to A/B pairs, sends, and acts on what stands."""

from __future__ import annotations

from collections.abc import Sequence

from django.db.models import Max

from leaderboard.regressions.models import BuildRecord, BuildRun, Verdict, VerdictKind
from leaderboard.regressions.states import BuildRunRole, BuildRunStatus, Confirmation, confirmation_move
from leaderboard.regressions.verdict import Kind, Outcome, Rule, judge
from leaderboard.results.models import Run, RunStatus


def reruns_add(*, build: BuildRecord, verdicts: Sequence[Verdict], count: int) -> list[Verdict]:
    """Add ``count`` re-runs of each verdict's reference config to ``build`` and
    mark the verdicts pending (the caller sends them). Return the verdicts."""
    for verdict in verdicts:
        ref = verdict.reference_config
        last = BuildRun.objects.filter(build=build, reference_config=ref).aggregate(last=Max("repeat"))["last"]
        BuildRun.objects.bulk_create(
            BuildRun(build=build, reference_config=ref, repeat=(last or 0) + 1 + k, role=BuildRunRole.RERUN)
            for k in range(count)
        )
        confirmation_move(verdict, Confirmation.PENDING)
        verdict.save(update_fields=["confirmation"])
    return list(verdicts)


def reruns_judge(*, build: BuildRecord) -> list[Verdict]:
    """Judge the reported re-runs of the build's pending verdicts: confirmed,
    refuted, or unchecked when no re-run finished; a verdict whose re-runs are
    not all reported stays pending. Return all the build's verdicts."""
    verdicts = list(build.verdicts.select_related("reference_config").order_by("id"))
    for verdict in verdicts:
        if verdict.confirmation == Confirmation.PENDING:
            _verdict_reruns_judge(build, verdict)
    return verdicts


def _verdict_reruns_judge(build: BuildRecord, verdict: Verdict) -> None:
    reruns = list(
        BuildRun.objects.filter(build=build, reference_config=verdict.reference_config, role=BuildRunRole.RERUN)
    )
    if any(br.status == BuildRunStatus.QUEUED for br in reruns):
        return
    finished = (
        Run.objects.filter(uuid__in=[br.run_uuid for br in reruns], status=RunStatus.FINISHED)
        .prefetch_related("samples")
        .order_by("started_at")
    )
    baseline = verdict.baseline_runs.prefetch_related("samples").first()
    if baseline is None:
        _unchecked(verdict, "no baseline run left to re-judge against; the first run stands")
        return
    rule = Rule(alpha=verdict.alpha, threshold_pct=verdict.threshold_pct, noise_k=verdict.noise_k)
    baseline_samples = baseline.build_decode_samples()
    outcomes = [judge(run.build_decode_samples(), baseline_samples, rule, verdict.noise) for run in finished]
    if not outcomes:
        _unchecked(verdict, "the re-run did not finish; the first run stands")
        return
    effects = [o.effect_pct for o in outcomes if o.effect_pct is not None]
    verdict.confirm_effect_pct = min(effects, key=abs, default=None)
    kind = Kind(verdict.kind)
    if all(o.kind == kind for o in outcomes):
        confirmation_move(verdict, Confirmation.CONFIRMED)
        verdict.reason_add(f"reproduced by {_reruns(outcomes)}")
        verdict.save(update_fields=["confirmation", "reason", "confirm_effect_pct"])
        return
    first = f"first run {verdict.effect_pct or 0:+.2f}%, p={verdict.p_value or 0:.2g}"
    dissent = next(o for o in outcomes if o.kind != kind)
    confirmation_move(verdict, Confirmation.REFUTED)
    verdict.kind = VerdictKind.NONE
    verdict.reason = f"not reproduced by {_reruns(outcomes)}: {dissent.reason}; {first}"[:300]
    verdict.save(update_fields=["kind", "reason", "confirmation", "confirm_effect_pct"])


def _unchecked(verdict: Verdict, note: str) -> None:
    confirmation_move(verdict, Confirmation.UNCHECKED)
    verdict.reason_add(note)
    verdict.save(update_fields=["confirmation", "reason", "confirm_effect_pct"])


def _reruns(outcomes: Sequence[Outcome]) -> str:
    effects = ", ".join(f"{o.effect_pct:+.2f}%" for o in outcomes if o.effect_pct is not None)
    return f"{len(outcomes)} re-run{'s' if len(outcomes) > 1 else ''} ({effects})"

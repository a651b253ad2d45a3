"""Verdicts: each new run judged against its baseline on the raw samples.

Only runs that measure the same thing are compared: the same comparison key
(GPUs + model file + workload) and the same configuration hash. The hash is
taken without ``command_line``, which carries the ephemeral port and the
build's binary path and so differs on every run of the same configuration.

The noise floor comes from the same matching runs of earlier accepted builds
(every repeat: a first build's A/A runs count), newest first."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from django.db import transaction

from leaderboard.regressions.models import (
    BaselineMode,
    BuildRecord,
    BuildRun,
    Subscription,
    Verdict,
)
from leaderboard.regressions.states import BuildRunRole
from leaderboard.regressions.verdict import (
    METRIC,
    Noise,
    Rule,
    compare_url,
    judge,
    median_build,
    noise_from_medians,
    run_median,
)
from leaderboard.results.models import Configuration, Run, RunStatus
from leaderboard.results.services.keys import config_hash

_VOLATILE_CONFIG_FIELDS = {"id", "config_hash", "command_line"}


def regression_config_hash(configuration: Configuration) -> str:
    """Return the config hash regression verdicts match runs on (see module doc)."""
    fields = {
        f.name: getattr(configuration, f.name)
        for f in Configuration._meta.concrete_fields
        if f.name not in _VOLATILE_CONFIG_FIELDS
    }
    return config_hash(fields)


@dataclass(frozen=True)
class _Candidate:
    build: BuildRecord
    repeat: int
    run: Run
    confirms: bool = False


# Earlier runs looked at per verdict: enough for any baseline window and noise
# history, and a verdict's cost does not grow with the subscription's age.
EARLIER_RUNS_LIMIT = 60


def _finished_run(build_run: BuildRun) -> Run | None:
    return (
        Run.objects.filter(uuid=build_run.run_uuid, status=RunStatus.FINISHED)
        .select_related("configuration")
        .prefetch_related("samples")
        .first()
    )


def earlier_matching_runs(*, build_run: BuildRun, new_run: Run) -> list[_Candidate]:
    """Return the finished runs (every repeat) of earlier accepted, benchmarked
    builds of the same subscription for this reference config that match
    ``new_run`` (comparison key and config hash), newest build first and
    repeat 0 first within a build. Bisection builds are never history."""
    build = build_run.build
    earlier = list(
        BuildRun.objects.nightly_history(reference_config=build_run.reference_config)
        .filter(build__created_at__lte=build.created_at)
        .exclude(build=build)
        .select_related("build")
        .order_by("-build__created_at", "-build__id", "repeat")[:EARLIER_RUNS_LIMIT]
    )
    runs = {
        r.uuid: r
        for r in Run.objects.filter(uuid__in=[e.run_uuid for e in earlier], status=RunStatus.FINISHED)
        .select_related("configuration")
        .prefetch_related("samples")
    }
    want_hash = regression_config_hash(new_run.configuration)
    out = []
    for earlier_run in earlier:
        run = runs.get(earlier_run.run_uuid)
        if run is None or run.comparison_key != new_run.comparison_key:
            continue
        if regression_config_hash(run.configuration) != want_hash:
            continue
        out.append(_Candidate(earlier_run.build, earlier_run.repeat, run, earlier_run.confirms))
    return out


def baseline_candidates(candidates: Sequence[_Candidate]) -> list[_Candidate]:
    """Return one run per earlier build, newest build first: its confirmation
    re-run if it had one, else its lowest repeat. An accepted build with a
    re-run is one whose first run was refuted as an outlier
    (services/confirmation.py), and the re-run is the run that held."""
    by_build: dict[int, _Candidate] = {}
    for candidate in candidates:
        held = by_build.get(candidate.build.pk)
        if held is None or (candidate.confirms and not held.confirms):
            by_build[candidate.build.pk] = candidate
    return list(by_build.values())


def noise_of(*, candidates: Sequence[_Candidate], subscription: Subscription) -> Noise:
    """Return the run-to-run noise of the newest ``noise_runs`` earlier runs:
    repeats of one build (the first build's A/A runs) and runs of successive
    accepted builds alike. Real small changes between builds widen it, which
    errs on the side of no alarm."""
    medians = [run_median(c.run.build_decode_samples()) for c in candidates[: max(1, subscription.noise_runs)]]
    return noise_from_medians(medians, subscription.noise_k)


def _pick_baseline(build: BuildRecord, candidates: Sequence[_Candidate]) -> _Candidate | None:
    if not candidates:
        return None
    sub = build.subscription
    if sub.baseline_mode == BaselineMode.MEDIAN_OF_LAST_N:
        last = list(candidates[: max(1, sub.baseline_builds)])
        index = median_build([c.run.build_decode_samples() for c in last])
        return last[index] if index is not None else None
    return candidates[0]


def verdict_for(*, build_run: BuildRun) -> Verdict | None:
    """Judge the run posted for ``build_run`` and store the verdict (replacing an
    earlier one for the same build, reference config and metric).

    Return None if the run has not arrived or did not finish. With no baseline
    yet (a first build) the verdict is NONE with that reason. The verdict
    records the noise floor it was judged with (unknown below MIN_NOISE_RUNS
    earlier runs, and the reason says so)."""
    new_run = _finished_run(build_run)
    if new_run is None:
        return None
    build = build_run.build
    sub = build.subscription
    earlier = earlier_matching_runs(build_run=build_run, new_run=new_run)
    baseline = _pick_baseline(build, baseline_candidates(earlier))
    noise = noise_of(candidates=earlier, subscription=sub)
    rule = Rule(alpha=sub.alpha, threshold_pct=sub.threshold_pct, noise_k=sub.noise_k)
    if baseline is None:
        outcome = judge(new_run.build_decode_samples(), [], rule, noise)
        reason = f"no earlier accepted build with a matching run; {noise.describe()}"
    else:
        outcome = judge(new_run.build_decode_samples(), baseline.run.build_decode_samples(), rule, noise)
        reason = outcome.reason
    commit_from = baseline.build.commit if baseline else build.previous_commit
    with transaction.atomic():
        verdict, _ = Verdict.objects.update_or_create(
            build=build,
            reference_config=build_run.reference_config,
            metric=METRIC,
            defaults={
                "new_run": new_run,
                "baseline_build": baseline.build if baseline else None,
                "kind": outcome.kind.value,
                "p_value": outcome.p_value,
                "effect_pct": outcome.effect_pct,
                "new_median": outcome.new_median,
                "baseline_median": outcome.baseline_median,
                "n_new": outcome.n_new,
                "n_baseline": outcome.n_baseline,
                "alpha": rule.alpha,
                "threshold_pct": rule.threshold_pct,
                "noise_k": noise.k,
                "noise_n_runs": noise.n_runs,
                "noise_spread_pct": noise.spread_pct,
                "noise_floor_pct": noise.floor_pct,
                "reason": reason[:300],
                "commit_from": commit_from,
                "commit_to": build.commit,
                "compare_url": compare_url(sub.repo_url, commit_from, build.commit),
            },
        )
        verdict.baseline_runs.set([baseline.run] if baseline else [])
    return verdict


def build_evaluate(*, build: BuildRecord) -> list[Verdict]:
    """Judge every arrived run of ``build`` (the judged run of each reference
    config; its repeats only measure noise); a build with a regression stops
    being accepted (it is no baseline for the next one). Return the verdicts."""
    build_runs = build.build_runs.filter(role=BuildRunRole.JUDGED).select_related("reference_config")
    verdicts = [v for br in build_runs if (v := verdict_for(build_run=br))]
    build.accepted_update(verdicts)
    return verdicts

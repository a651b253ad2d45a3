"""The rig's build report: record the build (or its failure), the runs it
posted, then judge them; a change is re-run first (services/confirmation.py),
and a regression that stands is alerted on."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.db import transaction
from django.db.models import F
from django.db.models.functions import Coalesce
from django.utils import timezone

from leaderboard.core.errors import ApplicationError
from leaderboard.regressions.models import BuildRecord, BuildRun, BuildStatus, Verdict
from leaderboard.regressions.services.bisect import bisect_step
from leaderboard.regressions.services.confirmation import (
    confirmation_queue,
    confirmation_settle,
    standing_changes_act_on,
)
from leaderboard.regressions.services.verdicts import build_evaluate

_BUILD_FIELDS = ("build_time_s", "compiler", "log_tail", "binary_path", "cached")


def build_report_record(*, report: Mapping[str, Any]) -> tuple[BuildRecord, list[Verdict]]:
    """Store what the rig reports for a build and judge its runs.

    ``report`` is ``{"build_id", "status" (built|failed|error), "error",
    "build": BuildResult fields, "runs": [{"build_run_id", "status", "error"}]}``.
    A failed build is recorded with its log and gets no verdicts. Return the
    build and the verdicts made; raise ApplicationError for an unknown build."""
    build_id = report.get("build_id")
    build = (
        BuildRecord.objects.select_related("subscription__rig").filter(pk=build_id).first()
        if isinstance(build_id, int)
        else None
    )
    if build is None:
        raise ApplicationError(f"no build {report.get('build_id')!r}", field="build_id", status_code=404)
    status = str(report.get("status") or "")
    built = report.get("build") or {}
    # A report for a build already benchmarked: its confirmation re-runs (or
    # the first report sent again). The build's own record stays as it was.
    rerun = build.status == BuildStatus.BENCHMARKED
    with transaction.atomic():
        if not rerun:
            _build_fields_record(build, status=status, built=built, error=str(report.get("error") or ""))
        bench_time_s = report.get("bench_time_s")
        if isinstance(bench_time_s, int | float) and bench_time_s >= 0:
            # Each report's runs add to the build's benchmark time (re-runs and A/B pairs too).
            BuildRecord.objects.filter(pk=build.pk).update(bench_time_s=Coalesce(F("bench_time_s"), 0.0) + bench_time_s)
            build.refresh_from_db(fields=["bench_time_s"])  # a later save() must not write the old value back
        reported = set()
        for run_report in report.get("runs") or []:
            reported.add(run_report.get("build_run_id"))
            BuildRun.objects.filter(pk=run_report.get("build_run_id"), build=build).update(
                status=str(run_report.get("status") or "")[:16], error=str(run_report.get("error") or "")
            )
        if rerun and status != "built":
            # The rig could not rebuild for the re-runs: they failed, and say why.
            build.build_runs.filter(confirms=True, status="").exclude(pk__in=reported).update(
                status="failed", error=f"{status}: {report.get('error') or ''}"[:2000]
            )
    if build.bisect_of_id is not None:
        # A bisection midpoint: judged against the regression it bisects, never alerted on.
        bisect_step(build=build)
        return build, []
    if build.status != BuildStatus.BENCHMARKED:
        return build, []
    if build.build_runs.filter(confirms=True).exists():
        verdicts = confirmation_settle(build=build)
    else:
        verdicts = build_evaluate(build=build)
        if confirmation_queue(build=build, verdicts=verdicts):
            # A change is re-run before anyone is told (services/confirmation.py).
            return build, verdicts
    standing_changes_act_on(build=build, verdicts=verdicts)
    return build, verdicts


def _build_fields_record(build: BuildRecord, *, status: str, built: Mapping[str, Any], error: str) -> None:
    for name in _BUILD_FIELDS:
        if built.get(name) is not None:
            setattr(build, name, built[name])
    build.log_tail = str(build.log_tail or "")[-8000:]
    # The commit's subject as the rig's checkout read it (kept when the report has none).
    build.subject = str(built.get("subject") or build.subject)[:300]
    build.error = error
    build.finished_at = timezone.now()
    if status == "failed":
        build.status = BuildStatus.FAILED
    elif status == "built":
        build.status = BuildStatus.BENCHMARKED
    else:
        build.status = BuildStatus.ERROR
    build.save()

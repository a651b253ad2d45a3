"""The rig's build report: record the build (or its failure) and the runs it
posted, then move the chain on by the build's phase (states.BuildStatus):

- a queued build's first report records the build itself; its runs are judged
  (services/verdicts.py) and a change is held for confirmation
  (services/confirmation.py), else what stands is acted on;
- a bisection midpoint's report places the midpoint (services/bisect.py);
- a report in a confirming phase carries the confirmation's runs, judged by
  services/confirmation.py;
- a report sent again for a benchmarked build judges its runs again (the
  subscription's rule may have changed) unless a confirmation already answered
  for them; either way what stands is acted on, idempotently."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.db import transaction
from django.utils import timezone
from pydantic import ValidationError

from leaderboard.core.errors import ApplicationError
from leaderboard.regressions.models import BuildRecord, BuildRun, Verdict
from leaderboard.regressions.services.bisect import bisect_step
from leaderboard.regressions.services.confirmation import (
    confirmation_judge,
    confirmation_queue,
    standing_changes_act_on,
)
from leaderboard.regressions.services.verdicts import build_evaluate
from leaderboard.regressions.states import (
    BENCHMARKED_PHASES,
    CONFIRMING,
    BuildRunStatus,
    BuildStatus,
    Confirmation,
    build_move,
    build_run_move,
)
from runners.delivery.nightly_schema import BuildReport, RunReport
from runners.delivery.schema_types import field_errors

_BUILD_FIELDS = ("build_time_s", "compiler", "log_tail", "binary_path", "cached")


# A build that has not reported itself yet (an error may be the service's own: its send failed).
_UNREPORTED = (BuildStatus.QUEUED, BuildStatus.ERROR)
_OUTCOMES = {"built": BuildStatus.BENCHMARKED, "failed": BuildStatus.FAILED}


def build_report_record(*, report: Any) -> tuple[BuildRecord, list[Verdict]]:
    """Store what the rig reports for a build and move the chain on (module doc).

    ``report`` is runners/delivery/nightly_schema.py's BuildReport as JSON; a
    report that does not fit it is refused (ApplicationError naming the field)
    before anything is stored. A failed build is recorded with its log and
    gets no verdicts. Return the build and its verdicts (none for a failed
    build or a bisection midpoint); raise ApplicationError (404) for an unknown build."""
    parsed = _parsed(report)
    build = BuildRecord.objects.select_related("subscription__rig").filter(pk=parsed.build_id).first()
    if build is None:
        raise ApplicationError(f"no build {parsed.build_id!r}", field="build_id", status_code=404)
    first_report = build.status in _UNREPORTED
    with transaction.atomic():
        if first_report:
            _build_fields_record(build, parsed)
        for run_report in parsed.runs:
            _build_run_record(build, run_report)
        if build.status in CONFIRMING and parsed.status != "built":
            # The rig could not rebuild for the confirmation: its runs failed, and say why.
            reported = [r.build_run_id for r in parsed.runs]
            for build_run in build.build_runs.filter(status=BuildRunStatus.QUEUED).exclude(pk__in=reported):
                build_run_move(build_run, BuildRunStatus.FAILED)
                build_run.error = f"{parsed.status}: {parsed.error}"[:2000]
                build_run.save(update_fields=["status", "error"])
        if first_report and build.fanout_of_id is not None and build.status == BuildStatus.BENCHMARKED:
            # A fan-out build runs A/B pairs only: its first report is already theirs.
            build_move(build, BuildStatus.AB_PAIRS)
            build.save(update_fields=["status"])
    if build.bisect_of_id is not None:
        # A bisection midpoint: judged against the regression it bisects, never alerted on.
        bisect_step(build=build)
        return build, []
    if build.status not in BENCHMARKED_PHASES:
        return build, []
    if build.status in CONFIRMING:
        verdicts = confirmation_judge(build=build)
    elif build.verdicts.exclude(confirmation=Confirmation.NOT_ASKED).exists():
        verdicts = list(build.verdicts.select_related("reference_config").order_by("id"))
    else:
        verdicts = build_evaluate(build=build)
        if confirmation_queue(build=build, verdicts=verdicts):
            # A change is confirmed before anyone is told (services/confirmation.py).
            return build, verdicts
    standing_changes_act_on(build=build, verdicts=verdicts)
    return build, verdicts


def _parsed(report: Any) -> BuildReport:
    """Return ``report`` checked against the schema; ApplicationError names the first field refused."""
    if not isinstance(report, Mapping):
        raise ApplicationError("expected an object", field="body")
    try:
        return BuildReport.model_validate(dict(report))
    except ValidationError as exc:
        field, (why, *_) = next(iter(field_errors(exc).items()))
        raise ApplicationError(why, field=field) from exc


def _build_run_record(build: BuildRecord, run_report: RunReport) -> None:
    """Store the rig's word on one run of ``build``; a run already reported keeps the first word."""
    build_run = BuildRun.objects.filter(pk=run_report.build_run_id, build=build).first()
    if build_run is None or build_run.status != BuildRunStatus.QUEUED:
        return
    build_run_move(build_run, BuildRunStatus(run_report.status))
    build_run.error = run_report.error
    build_run.failure_kind = run_report.failure_kind
    build_run.save(update_fields=["status", "error", "failure_kind"])


def _build_fields_record(build: BuildRecord, report: BuildReport) -> None:
    built = report.build.model_dump(exclude_unset=True)
    for name in _BUILD_FIELDS:
        if built.get(name) is not None:
            setattr(build, name, built[name])
    build.log_tail = str(build.log_tail or "")[-8000:]
    # The commit's subject as the rig's checkout read it (kept when the report has none).
    build.subject = (report.build.subject or build.subject)[:300]
    build.error = report.error
    build.finished_at = timezone.now()
    build_move(build, _OUTCOMES.get(report.status, BuildStatus.ERROR))
    build.save()

"""Storing a recorded nightly timeline: the JSON ``scripts/record_demo_nightly.py``
writes (``TIMELINE_FORMAT``): a subscription, its reference configurations and,
night by night, the build queued, the rig's build reports and the run documents
it posted. Each night is replayed through the services the nightly chain uses:
the build and its runs under the recorded run uuids, the runs stored as the API
stores them, then the rig's report recorded and judged (``build_report_record``),
so the verdicts are the service's own, judged again from the raw samples.

A change the recording re-ran is replayed with its recorded re-run: the import
adds the re-run's BuildRuns itself (what ``confirmation_queue`` would ask a rig
for) and judges it as the re-run's report would. The subscription is stored
inactive: its repository is a local one of the recording machine, and nothing
is sent to a rig. Used by ``manage.py import_nightly`` (the demo's timeline)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.utils.dateparse import parse_datetime

from leaderboard.core.errors import ApplicationError
from leaderboard.regressions.models import (
    BuildRecord,
    BuildRun,
    ConfirmMode,
    ReferenceConfig,
    Subscription,
    VerdictKind,
)
from leaderboard.regressions.services.builds import build_report_record
from leaderboard.regressions.states import BuildRunRole, BuildStatus, Confirmation, build_move, confirmation_move
from leaderboard.results.imports import run_document_store
from leaderboard.results.models import Rig

TIMELINE_FORMAT = "rigboard-nightly/1"
_SUBSCRIPTION_FIELDS = ("alpha", "threshold_pct", "noise_k", "noise_runs", "build_jobs", "confirm_runs")


@dataclass(frozen=True)
class TimelineImport:
    """The subscription stored (or found) and how many builds and runs were new."""

    subscription: Subscription
    builds_created: int
    runs_created: int


def _when(value: Any, field: str) -> dt.datetime:
    parsed = parse_datetime(value) if isinstance(value, str) else None
    if parsed is None or parsed.tzinfo is None:
        raise ApplicationError("expected an ISO 8601 time with its offset", field=field)
    return parsed


def _mapping(value: Any, field: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ApplicationError("expected an object", field=field)
    return value


def _list(value: Any, field: str) -> list[Any]:
    if not isinstance(value, list):
        raise ApplicationError("expected a list", field=field)
    return value


def timeline_import(*, rig: Rig, document: Mapping[str, Any]) -> TimelineImport:
    """Store a recorded timeline of ``rig``; a build already stored (the same
    commit on the same subscription) is skipped, so importing twice stores
    nothing twice. Raise ApplicationError naming the bad field; a night that
    fails stores nothing of that night."""
    if document.get("format") != TIMELINE_FORMAT:
        raise ApplicationError(f"expected {TIMELINE_FORMAT!r}", field="format")
    sub_data = _mapping(document.get("subscription"), "subscription")
    runs = {str(r.get("uuid")): r for r in _list(document.get("runs"), "runs") if isinstance(r, Mapping)}
    with transaction.atomic():
        subscription, _ = Subscription.objects.get_or_create(
            rig=rig,
            repo_url=str(sub_data.get("repo_url") or ""),
            branch=str(sub_data.get("branch") or "master"),
            build_flags=str(sub_data.get("build_flags") or ""),
            defaults={
                "is_active": False,
                # Recordings replay the re-run rule's re-runs (A/B pairs are not in the format).
                "confirm_mode": ConfirmMode.RERUN,
                **{k: sub_data[k] for k in _SUBSCRIPTION_FIELDS if sub_data.get(k) is not None},
            },
        )
        references = {}
        for i, ref in enumerate(_list(document.get("reference_configs"), "reference_configs")):
            ref = _mapping(ref, f"reference_configs.{i}")
            references[str(ref.get("name"))], _ = ReferenceConfig.objects.get_or_create(
                subscription=subscription, name=str(ref.get("name")), defaults={"spec": ref.get("spec") or {}}
            )
    builds_created = runs_created = 0
    for i, night in enumerate(_list(document.get("builds"), "builds")):
        night = _mapping(night, f"builds.{i}")
        if BuildRecord.objects.filter(subscription=subscription, commit=night.get("commit")).exists():
            continue
        try:
            runs_created += _night_import(subscription, references, night, runs)
        except ApplicationError as exc:
            raise ApplicationError(exc.message, field=f"builds.{i}.{exc.field}") from exc
        builds_created += 1
    return TimelineImport(subscription, builds_created, runs_created)


@transaction.atomic
def _night_import(
    subscription: Subscription,
    references: Mapping[str, ReferenceConfig],
    night: Mapping[str, Any],
    runs: Mapping[str, Mapping[str, Any]],
) -> int:
    """Store one night (its build, runs, reports and verdicts); return the runs stored."""
    build = BuildRecord.objects.create(
        subscription=subscription,
        commit=str(night.get("commit") or ""),
        subject=str(night.get("subject") or "")[:300],
        previous_commit=str(night.get("previous_commit") or ""),
        created_at=_when(night.get("queued_at"), "queued_at"),
    )
    planned = [_mapping(b, f"build_runs.{j}") for j, b in enumerate(_list(night.get("build_runs"), "build_runs"))]
    reports = [_mapping(r, f"reports.{j}") for j, r in enumerate(_list(night.get("reports"), "reports"))]
    if not reports:
        raise ApplicationError("expected the rig's build report", field="reports")
    first = [e for e in planned if not e.get("confirms")]
    reruns = [e for e in planned if e.get("confirms")]
    first_runs, stored = _build_runs_create(build, references, first, runs)
    # The recording's re-runs are in the file: the first report is judged
    # without queueing new ones to a rig (confirm_runs 0 for that call only)...
    confirm_runs = subscription.confirm_runs
    Subscription.objects.filter(pk=subscription.pk).update(confirm_runs=0)
    build_report_record(report=_report_for(build, reports[0], first_runs))
    Subscription.objects.filter(pk=subscription.pk).update(confirm_runs=confirm_runs)
    if reruns:
        # ...and its changes then wait for the recorded re-runs, judged as their report is.
        rerun_runs, more = _build_runs_create(build, references, reruns, runs)
        stored += more
        held = build.verdicts.exclude(kind=VerdictKind.NONE).filter(
            reference_config__in=[br.reference_config_id for br in rerun_runs]
        )
        for verdict in held:
            confirmation_move(verdict, Confirmation.PENDING)
            verdict.save(update_fields=["confirmation"])
        build.refresh_from_db()
        build_move(build, BuildStatus.RERUNNING)
        build.save(update_fields=["status"])
        for report in reports[1:]:
            build_report_record(report=_report_for(build, report, rerun_runs))
    finished = night.get("finished_at")
    if finished:
        BuildRecord.objects.filter(pk=build.pk).update(finished_at=_when(finished, "finished_at"))
    return stored


def _build_runs_create(
    build: BuildRecord,
    references: Mapping[str, ReferenceConfig],
    planned: list[Mapping[str, Any]],
    runs: Mapping[str, Mapping[str, Any]],
) -> tuple[list[BuildRun], int]:
    """Create the BuildRuns under their recorded uuids and store the runs posted
    for them; return the BuildRuns and how many runs were new."""
    build_runs, stored = [], 0
    for entry in planned:
        ref = references.get(str(entry.get("reference_config")))
        if ref is None:
            raise ApplicationError("not one of reference_configs", field="build_runs.reference_config")
        repeat = int(entry.get("repeat") or 0)
        build_run = BuildRun.objects.create(
            build=build, reference_config=ref, repeat=repeat, run_uuid=str(entry.get("run_uuid")), role=_role(entry)
        )
        build_runs.append(build_run)
        document = runs.get(str(build_run.run_uuid))
        if document is not None:
            try:
                stored += run_document_store(rig=build.subscription.rig, document=document).created
            except ApplicationError as exc:
                raise ApplicationError(exc.message, field=f"runs.{build_run.run_uuid}.{exc.field}") from exc
    return build_runs, stored


def _role(entry: Mapping[str, Any]) -> BuildRunRole:
    """Return a recorded run's role: the format marks re-runs ``confirms``; other repeats measured noise."""
    if entry.get("confirms"):
        return BuildRunRole.RERUN
    return BuildRunRole.NOISE if int(entry.get("repeat") or 0) else BuildRunRole.JUDGED


def _report_for(build: BuildRecord, report: Mapping[str, Any], build_runs: list[BuildRun]) -> dict[str, Any]:
    """Return the recorded report addressed to this database's build and BuildRuns (by run uuid)."""
    by_uuid = {str(br.run_uuid): br.pk for br in build_runs}
    rows = []
    for row in _list(report.get("runs") or [], "reports.runs"):
        row = _mapping(row, "reports.runs")
        if str(row.get("run_uuid")) in by_uuid:
            rows.append({**row, "build_run_id": by_uuid[str(row.get("run_uuid"))]})
    return {**report, "build_id": build.pk, "runs": rows}

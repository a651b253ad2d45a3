"""Storing a recorded nightly timeline: the JSON ``manage.py export_nightly``
writes (``TIMELINE_FORMAT``): a subscription, its reference configurations and,
night by night, the build queued, the rig's build reports and the run documents
it posted. Each night is replayed through the services the nightly chain uses:
the build and its runs under the recorded run uuids, the runs stored as the API
stores them, then the rig's report recorded and judged (``build_report_record``),
so the verdicts are the service's own, judged again from the raw samples.

A change the recording re-ran is replayed with its recorded re-run: the import
adds the re-run's BuildRuns itself (what ``confirmation_queue`` would ask a rig
for) and judges it as the re-run's report would. The subscription is stored
inactive: it was the recording machine's, and nothing is sent to a rig. Used
by ``manage.py import_nightly`` (the demo's nightly pages)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.utils.dateparse import parse_datetime

from leaderboard.core.errors import ApplicationError
from leaderboard.regressions.ab_blocks import judged_blocks
from leaderboard.regressions.models import (
    BuildRecord,
    BuildRun,
    ConfirmMode,
    Follows,
    ReferenceConfig,
    ReleaseSource,
    Subscription,
    Verdict,
)
from leaderboard.regressions.services.builds import build_report_record
from leaderboard.regressions.services.confirmation import blocks_report_receive, sends_held
from leaderboard.regressions.services.verdict_blocks import VERDICT_PREFIX, BatchAsk
from leaderboard.regressions.states import CONFIRMING, BuildRunRole, BuildRunStatus
from leaderboard.results.imports import run_document_store
from leaderboard.results.models import Rig

TIMELINE_FORMAT = "rigboard-nightly/1"
_SUBSCRIPTION_FIELDS = (
    "alpha", "threshold_pct", "noise_k", "noise_runs", "build_jobs", "confirm_runs", "ab_max_pairs", "resolve_pct",
)  # fmt: skip
# What a recording's subscription may say of how it was followed and confirmed (older ones: none of it).
_SUBSCRIPTION_CHOICES = {"follows": Follows, "release_source": ReleaseSource, "confirm_mode": ConfirmMode}
# The runs of a night's first round; later ones are the confirmation the service asks for.
_FIRST_ROUND = (BuildRunRole.JUDGED, BuildRunRole.NOISE)


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


def _choices(sub_data: Mapping[str, Any]) -> dict[str, Any]:
    """Return what the recording's subscription says of how it followed and confirmed
    (an older recording screened no step by A/B blocks and says nothing of it)."""
    chosen: dict[str, Any] = {}
    screen = sub_data.get("screen_every_step", False)
    if not isinstance(screen, bool):
        raise ApplicationError("expected true or false", field="subscription.screen_every_step")
    chosen["screen_every_step"] = screen
    for name, choices in _SUBSCRIPTION_CHOICES.items():
        value = sub_data.get(name)
        if value is not None:
            if value not in choices.values:
                raise ApplicationError(f"expected one of {', '.join(choices.values)}", field=f"subscription.{name}")
            chosen[name] = str(value)
    return chosen


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
                # An older recording confirmed by re-runs and says nothing of it.
                "confirm_mode": ConfirmMode.RERUN,
                **_choices(sub_data),
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
    """Store one night (its build, runs, reports and verdicts); return the runs stored.

    The first round (the judged run and the noise runs) is stored and reported
    as the rig reported it; whatever confirmation the service then asks for (re-runs,
    A/B pairs, batch after batch) is held back from the rig (``sends_held``) and
    filled, in the order asked, with the recording's next runs. A recording that
    ends before the service's confirmation does, or holds runs it never asked for,
    was judged otherwise than it is now: refused, naming ``build_runs``."""
    build = BuildRecord.objects.create(
        subscription=subscription,
        commit=str(night.get("commit") or ""),
        subject=str(night.get("subject") or "")[:300],
        previous_commit=str(night.get("previous_commit") or ""),
        created_at=_when(night.get("queued_at"), "queued_at"),
    )
    entries = [_mapping(b, f"build_runs.{j}") for j, b in enumerate(_list(night.get("build_runs"), "build_runs"))]
    reports = [_mapping(r, f"reports.{j}") for j, r in enumerate(_list(night.get("reports"), "reports"))]
    if not reports:
        raise ApplicationError("expected the rig's build report", field="reports")
    outcome = {k: v for k, v in reports[0].items() if k not in ("runs", "build_id")}
    rows = {
        str(row.get("run_uuid")): row
        for report in reports
        for row in _list(report.get("runs") or [], "reports.runs")
        if isinstance(row, Mapping)
    }
    first = [e for e in entries if _role(e) in _FIRST_ROUND]
    later = [e for e in entries if _role(e) not in _FIRST_ROUND]
    first_runs = _build_runs_create(build, references, first)
    stored = _documents_store(build, first_runs, runs)
    recorded_blocks = {
        str(_mapping(b, f"ab_blocks.{j}").get("reference_config")): _RecordedBlocks(b)
        for j, b in enumerate(_list(night.get("ab_blocks") or [], "ab_blocks"))
    }
    with sends_held() as batches:
        build_report_record(report=_report_for(build, outcome, rows, first_runs))
        while True:
            if batches:
                _blocks_feed(batches.pop(0), recorded_blocks)
                continue
            asked = _asked(build)
            if asked is None:
                break
            if len(later) < len(asked):
                raise ApplicationError(
                    f"the service asks for {len(asked)} more runs than the recording holds", field="build_runs"
                )
            taken, later = later[: len(asked)], later[len(asked) :]
            _build_runs_fill(asked, taken, references)
            stored += _documents_store(build, asked, runs)
            # The first report carried the benchmark time of every round.
            build_report_record(report=_report_for(build, {**outcome, "bench_time_s": None}, rows, asked))
    if later:
        raise ApplicationError(
            f"{len(later)} recorded runs were never asked for: the recording was judged otherwise", field="build_runs"
        )
    finished = night.get("finished_at")
    if finished:
        BuildRecord.objects.filter(pk=build.pk).update(finished_at=_when(finished, "finished_at"))
    return stored


class _RecordedBlocks:
    """A verdict's recorded A/B blocks, handed out batch by batch as the service asks."""

    def __init__(self, entry: Mapping[str, Any]) -> None:
        self.design = str(entry.get("design") or "")
        self.blocks = [_mapping(b, "ab_blocks.blocks") for b in _list(entry.get("blocks") or [], "ab_blocks.blocks")]
        self.ended = str(entry.get("ended") or "measured")
        self.error = str(entry.get("error") or "")
        self.taken = 0

    def batch(self, count: int) -> tuple[str, list[Mapping[str, Any]]]:
        """Return the next batch's status and blocks: the next ``count`` blocks the
        rule judges (and any heavy ones among them); the recording's end once none is left."""
        out: list[Mapping[str, Any]] = []
        while self.taken < len(self.blocks) and len(judged_blocks(out)) < count:
            out.append(self.blocks[self.taken])
            self.taken += 1
        if judged_blocks(out) or self.ended == "measured":
            return "measured", out
        return self.ended, out


def _blocks_feed(ask: BatchAsk, recorded: Mapping[str, _RecordedBlocks]) -> None:
    """Answer a batch of A/B blocks the service asked for with the recording's next blocks."""
    verdict = Verdict.objects.select_related("reference_config").get(pk=ask.verdict_id)
    entry = recorded.get(verdict.reference_config.name)
    if entry is None:
        raise ApplicationError(
            f"the service asks for A/B blocks of {verdict.reference_config.name}, which the recording lacks",
            field="ab_blocks",
        )
    status, blocks = entry.batch(ask.count)
    if status == "measured" and not blocks:
        raise ApplicationError("the service asks for more A/B blocks than the recording holds", field="ab_blocks")
    blocks_report_receive(report={
        "confirmation_id": f"{VERDICT_PREFIX}{verdict.pk}", "status": status, "design": entry.design,
        "error": entry.error, "blocks": blocks,
    })  # fmt: skip


def _asked(build: BuildRecord) -> list[BuildRun] | None:
    """Return the runs the service asks for to confirm the build's changes (queued while
    it confirms: re-runs, A/B pairs), None once it asks for none. A run the rig never
    reported outside a confirmation (a build that failed) is not asked for."""
    build.refresh_from_db(fields=["status"])
    if build.status not in CONFIRMING:
        return None
    asked = list(build.build_runs.filter(status=BuildRunStatus.QUEUED).order_by("repeat", "pk"))
    if not asked:
        raise ApplicationError("the build waits on a confirmation with no run asked for", field="build_runs")
    return asked


def _build_runs_create(
    build: BuildRecord, references: Mapping[str, ReferenceConfig], planned: list[Mapping[str, Any]]
) -> list[BuildRun]:
    """Create the first round's BuildRuns under their recorded uuids."""
    return [
        BuildRun.objects.create(
            build=build,
            reference_config=_reference(references, entry),
            repeat=int(entry.get("repeat") or 0),
            run_uuid=str(entry.get("run_uuid")),
            role=_role(entry),
        )
        for entry in planned
    ]


def _build_runs_fill(
    asked: list[BuildRun], recorded: list[Mapping[str, Any]], references: Mapping[str, ReferenceConfig]
) -> None:
    """Give the runs the service asked for the recorded runs' uuids, one by one in
    the order asked; refuse a recorded run of another role or reference config."""
    for build_run, entry in zip(asked, recorded, strict=True):
        if (_reference(references, entry).pk, _role(entry)) != (build_run.reference_config_id, build_run.role):
            raise ApplicationError(
                f"recorded as a {_role(entry)} run, where the service asks for a {build_run.role} run",
                field="build_runs.role",
            )
        build_run.run_uuid = str(entry.get("run_uuid"))
        build_run.save(update_fields=["run_uuid"])


def _documents_store(build: BuildRecord, build_runs: list[BuildRun], runs: Mapping[str, Mapping[str, Any]]) -> int:
    """Store the recorded run documents of ``build_runs`` as the API stores them; return how many were new."""
    stored = 0
    for build_run in build_runs:
        document = runs.get(str(build_run.run_uuid))
        if document is not None:
            try:
                stored += run_document_store(rig=build.subscription.rig, document=document).created
            except ApplicationError as exc:
                raise ApplicationError(exc.message, field=f"runs.{build_run.run_uuid}.{exc.field}") from exc
    return stored


def _reference(references: Mapping[str, ReferenceConfig], entry: Mapping[str, Any]) -> ReferenceConfig:
    ref = references.get(str(entry.get("reference_config")))
    if ref is None:
        raise ApplicationError("not one of reference_configs", field="build_runs.reference_config")
    return ref


def _role(entry: Mapping[str, Any]) -> str:
    """Return a recorded run's role: ``role`` where the recording says it (states.BuildRunRole);
    an older recording marks re-runs ``confirms``, its other repeats measured noise."""
    role = entry.get("role")
    if role is not None:
        if role not in BuildRunRole.values:
            raise ApplicationError(f"expected one of {', '.join(BuildRunRole.values)}", field="build_runs.role")
        return str(role)
    if entry.get("confirms"):
        return BuildRunRole.RERUN
    return BuildRunRole.NOISE if int(entry.get("repeat") or 0) else BuildRunRole.JUDGED


def _report_for(
    build: BuildRecord, outcome: Mapping[str, Any], rows: Mapping[str, Mapping[str, Any]], build_runs: list[BuildRun]
) -> dict[str, Any]:
    """Return the rig's report of ``build_runs`` (their recorded rows, by run uuid; a run
    of a build that failed has none) addressed to this database's build and BuildRuns."""
    report_rows = [{**rows[str(br.run_uuid)], "build_run_id": br.pk} for br in build_runs if str(br.run_uuid) in rows]
    return {**outcome, "build_id": build.pk, "runs": report_rows}

"""A subscription's timeline as a recording (``rigboard-nightly/1``, what
services/imports.py stores): its reference configurations and, build by build,
the build queued, what the rig reported of it and of each run (the first round
and every confirmation run, with its role), and the run documents the rig
posted, read from the copies its worker kept (``RIGBOARD_RUNS_DIR``).

Imported elsewhere, the service judges every run again from its raw samples
and asks for the same confirmation the recording holds. No path of the
recording machine travels: the model, the binary, the command lines and the
server logs with files by name (runners.portable)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path, PurePath
from typing import Any

from django.utils import timezone

from leaderboard.core.errors import ApplicationError
from leaderboard.regressions.models import BuildRecord, BuildRun, Subscription, Verdict
from leaderboard.regressions.services.imports import TIMELINE_FORMAT
from leaderboard.regressions.states import CONFIRMING, BuildRunStatus, BuildStatus, Confirmation
from runners.portable import portable_text

# The rig's word for a build's own outcome (nightly_schema.BuildOutcomeName) by the phase it left.
_OUTCOME = {BuildStatus.FAILED: "failed", BuildStatus.ERROR: "error"}
_SUBSCRIPTION_FIELDS = (
    "repo_url", "branch", "follows", "release_source", "build_flags", "alpha", "threshold_pct", "noise_k",
    "noise_runs", "build_jobs", "confirm_mode", "confirm_runs", "ab_max_pairs", "resolve_pct", "screen_every_step",
)  # fmt: skip


def _spec(spec: dict[str, Any]) -> dict[str, Any]:
    server = dict(spec.get("server") or {})
    if server.get("model"):
        server["model"] = PurePath(str(server["model"])).name
    return {**spec, "server": server}


def _iso(when: Any) -> str | None:
    return when.isoformat(timespec="seconds") if when else None


def _build_run(br: BuildRun) -> dict[str, Any]:
    return {
        "reference_config": br.reference_config.name,
        "repeat": br.repeat,
        "role": br.role,
        "run_uuid": str(br.run_uuid),
        "run_commit": br.run_commit,
    }


def _row(br: BuildRun) -> dict[str, Any]:
    if br.status == BuildRunStatus.QUEUED:
        raise ApplicationError(f"run {br.run_uuid} is still {br.status}: export a settled timeline", field="builds")
    return {
        "build_run_id": br.pk,
        "run_uuid": str(br.run_uuid),
        "status": br.status,
        "error": br.error,
        "failure_kind": br.failure_kind,
    }


def _blocks(verdict: Verdict) -> dict[str, Any]:
    """A verdict's A/B blocks as recorded, and how the last batch ended: measured,
    or (the verdict unchecked) held back or an error, as its reason says."""
    ended = "measured"
    if verdict.confirmation == Confirmation.UNCHECKED:
        ended = "held_back" if "A/B blocks held back" in verdict.reason else "error"
    return {
        "reference_config": verdict.reference_config.name,
        "design": verdict.ab_design,
        "blocks": verdict.ab_blocks,
        "ended": ended,
        "error": verdict.reason if ended == "error" else "",
    }


def _night(index: int, build: BuildRecord) -> dict[str, Any]:
    build_runs = list(build.build_runs.select_related("reference_config").order_by("repeat", "pk"))
    return {
        "night": index,
        "commit": build.commit,
        "subject": build.subject,
        "previous_commit": build.previous_commit,
        "queued_at": _iso(build.created_at),
        "finished_at": _iso(build.finished_at),
        "build_runs": [_build_run(br) for br in build_runs],
        # As the recording service judged them: where it is imported, the service judges again.
        "verdicts_recorded": [
            {"reference_config": v.reference_config.name, "kind": v.kind, "confirmation": v.confirmation}
            for v in build.verdicts.select_related("reference_config").order_by("reference_config_id", "pk")
        ],
        # A/B blocks confirmations (services/verdict_blocks.py), every block as the rig reported it.
        "ab_blocks": [
            _blocks(v) for v in build.verdicts.select_related("reference_config").order_by("pk") if v.ab_blocks
        ],
        # One report of every run: the importer reports each round as the service asks for it.
        "reports": [
            {
                "build_id": build.pk,
                "status": _OUTCOME.get(BuildStatus(build.status), "built"),
                "error": build.error,
                "bench_time_s": build.bench_time_s,
                "build": {
                    "commit": build.commit,
                    "status": _OUTCOME.get(BuildStatus(build.status), "built"),
                    "build_time_s": build.build_time_s,
                    "compiler": build.compiler,
                    "log_tail": portable_text(build.log_tail),
                    "binary_path": PurePath(build.binary_path).name,
                    "cached": build.cached,
                },
                "runs": [_row(br) for br in build_runs],
            }
        ],
    }


def _portable(document: dict[str, Any]) -> dict[str, Any]:
    """Return a run document as another machine reads it: its command line and server log
    with files by name and no loopback port (runners.portable), the rest as posted."""
    configuration = dict(document.get("configuration") or {})
    if configuration.get("command_line"):
        configuration["command_line"] = portable_text(str(configuration["command_line"]))
    portable = {**document, "configuration": configuration}
    if document.get("server_log_tail"):
        portable["server_log_tail"] = portable_text(str(document["server_log_tail"]))
    return portable


def _documents(runs_dir: Path, uuids: Iterable[str]) -> list[dict[str, Any]]:
    documents = []
    for uuid in uuids:
        path = runs_dir / f"{uuid}.json"
        if path.exists():
            documents.append(_portable(json.loads(path.read_text())))
    return documents


def timeline_document(subscription: Subscription, *, runs_dir: Path, recorded_on: str) -> dict[str, Any]:
    """Return ``subscription``'s settled builds (neither queued nor confirming: a replay
    half done exports what it has settled) as a recording, with the run documents
    from ``runs_dir`` (a run the rig never posted has none: the report says why).
    Raise ApplicationError for a settled build whose run still waits on its rig."""
    builds = list(
        subscription.builds.filter(bisect_of__isnull=True, fanout_of__isnull=True)
        .exclude(status__in=[BuildStatus.QUEUED, *CONFIRMING])
        .order_by("created_at", "pk")
    )
    nights = [_night(i + 1, b) for i, b in enumerate(builds)]
    uuids = [entry["run_uuid"] for night in nights for entry in night["build_runs"]]
    return {
        "format": TIMELINE_FORMAT,
        "recorded_on": recorded_on,
        "recorded_at": _iso(timezone.now()),
        "upstream": subscription.repo_url,
        "subscription": {name: getattr(subscription, name) for name in _SUBSCRIPTION_FIELDS},
        "reference_configs": [
            {"name": ref.name, "spec": _spec(ref.spec)} for ref in subscription.reference_configs.order_by("pk")
        ],
        "builds": nights,
        "runs": _documents(runs_dir, uuids),
    }

"""The rig-side A/B task: a batch of interleaved blocks (or, where two servers do
not fit, run-level pairs) of a baseline and a candidate build, reported back.

Registered by name (``rigboard.ab_blocks``) on the rig's Celery app. The spec::

    {"confirmation_id": …, "repo_url": …, "flags": …, "jobs": 2,
     "a_commit": …, "b_commit": …,          # the same commit twice: an A/A check
     "source": "git",                       # or "sdist": where a release (bN) comes from
     "config": {…},                         # the reference config (runners.config.RigConfig's shape)
     "first_index": 0, "count": 4, "reps_per_side": 12,
     "retry_countdown_s": 300, "max_retries": 6,
     "report_task": "regressions.ab_report", "report_queue": "celery"}

Both commits are built with the same flags (runners/builds/build.py, cached by
commit: usually found). A batch with a block under heavy contention
(runners/ab_design.py ``contention_call``) is not reported for
judging: the task retries later with Celery's retry (the worker is free
meanwhile; nothing sleeps), and after ``max_retries`` reports the batch held
back, so the service can say why the confirmation did not settle.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from celery import Task
from pydantic import ValidationError

from runners.builds.ab_block import ConfirmationRecord, run_confirmation
from runners.builds.build import BuildError, BuildResult, BuildSpec, SourceErrors, build
from runners.builds.releases import ReleaseSource, release_number
from runners.celery_app import app
from runners.config import ConfigError, RigConfig
from runners.delivery.ab_schema import AbDispatch, AbReport
from runners.env import build_cache_dir
from runners.harness.workload import Workload

logger = logging.getLogger(__name__)

TASK_NAME = "rigboard.ab_blocks"
DEFAULT_RETRY_COUNTDOWN_S = 300
DEFAULT_MAX_RETRIES = 6

Measure = Callable[..., ConfirmationRecord]


def ab_blocks_run(
    spec: Mapping[str, Any], *, cache_dir: Path | None = None, measure: Measure = run_confirmation
) -> dict[str, Any]:
    """Build both commits and measure the batch; return the report
    (runners/delivery/ab_schema.py's AbReport as JSON). A spec that does not
    fit the schema, a build that fails or a bad config is an ``error`` report,
    never an exception."""
    ident = str(spec.get("confirmation_id") or "") if isinstance(spec, Mapping) else ""
    try:
        dispatch = AbDispatch.model_validate(dict(spec))
    except (ValidationError, TypeError, ValueError) as exc:
        return AbReport(confirmation_id=ident or "?", status="error", error=f"bad spec: {exc}"[:500]).as_message()
    try:
        config = RigConfig.from_mapping(dispatch.config)
        if config.server is None:
            raise ConfigError("config.server", "an A/B confirmation launches its own servers")
        a_bin = _binary(dispatch, dispatch.a_commit, cache_dir)
        b_bin = _binary(dispatch, dispatch.b_commit, cache_dir)
        workload = Workload.from_config(config.workload)
    except (BuildError, *SourceErrors, ConfigError, KeyError, ValueError, OSError) as exc:
        return AbReport(confirmation_id=dispatch.confirmation_id, status="error",
                        error=f"{type(exc).__name__}: {exc}"[:500]).as_message()  # fmt: skip
    started = time.monotonic()
    record = measure(
        a=replace(config.server, binary=a_bin),
        b=replace(config.server, binary=b_bin),
        workload=workload,
        first_index=dispatch.first_index,
        count=dispatch.count,
        reps_per_side=dispatch.reps_per_side,
    )
    report = AbReport.model_validate({
        "confirmation_id": dispatch.confirmation_id, "status": "held_back" if record.held_back else "measured",
        "wall_s": round(time.monotonic() - started, 3), **record.as_dict(),
    })  # fmt: skip
    return report.as_message()


def _binary(dispatch: AbDispatch, commit: str, cache_dir: Path | None) -> str:
    if not dispatch.repo_url:  # a rig given its builds by path (tests, a lent machine)
        return dispatch.binaries[commit]
    # A release comes from the source the subscription names; a commit always from git.
    source = ReleaseSource(dispatch.source) if release_number(commit) is not None else ReleaseSource.GIT
    result: BuildResult = build(
        BuildSpec.from_flags_string(repo_url=dispatch.repo_url, commit=commit, flags=dispatch.flags,
                                    jobs=dispatch.jobs, source=source),
        cache_dir or build_cache_dir(),
    )  # fmt: skip
    if not result.ok:
        raise BuildError(f"build of {commit[:10]} failed")
    return result.binary_path


@app.task(bind=True, name=TASK_NAME, acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def ab_blocks_task(self: Task, spec: dict[str, Any]) -> dict[str, Any]:
    """Measure the batch; under heavy contention retry later (Celery's retry,
    ``retry_countdown_s``), at most ``max_retries`` times, then report it held
    back. Send the report to the service's ``report_task``; return it."""
    report = ab_blocks_run(spec)
    retries = int(spec.get("max_retries", DEFAULT_MAX_RETRIES) or 0)
    if report["status"] == "held_back" and self.request.retries < retries:
        logger.info("A/B batch %s held back by contention: retry %d", spec.get("confirmation_id"), self.request.retries)
        raise self.retry(countdown=int(spec.get("retry_countdown_s", DEFAULT_RETRY_COUNTDOWN_S)), max_retries=retries)
    app.send_task(
        str(spec.get("report_task") or "regressions.ab_report"),
        args=[report],
        queue=str(spec.get("report_queue") or "celery"),
        retry=True,
        retry_policy={"max_retries": 10, "interval_start": 1, "interval_step": 5, "interval_max": 30},
    )
    return {k: v for k, v in report.items() if k != "blocks"}

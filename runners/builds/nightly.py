"""The rig-side nightly task: build llama-server at the commit the service
found, benchmark each reference configuration with it, report back.

Registered by name (``rigboard.nightly_build_and_bench``) on the rig's Celery
app; the service sends it with ``send_task`` to ``rig.<name>`` and a JSON spec
(leaderboard/regressions/services/detection.py ``build_dispatch_spec``); the
spec and the report are runners/delivery/nightly_schema.py's NightlyDispatch
and BuildReport. Runs
go to the service over the REST API like any run (with the rig's own token,
under the uuids the service assigned, stack.build = the commit); the build
record then goes back by task name (``regressions.build_report``), after the
runs, so the service judges runs that are already stored.

Environment, besides runners/celery_app.py's: RIGBOARD_BUILD_CACHE_DIR (where
builds are cached by commit; default ~/.cache/rigboard/builds; ccache keeps its
objects in its ``ccache/`` unless CCACHE_DIR is set, see runners/builds/build.py).

A first build of a reference config comes with several entries for it in
``runs`` (repeats, each with its own run uuid): they run one after the other
on the same binary, and their spread is the noise floor the next build's
verdict is judged with.

An A/B confirmation (leaderboard/regressions/ab.py) sends runs that name
another ``commit``: the baseline build. It is built with the same flags (or,
as a rule, found in the cache) and those runs use its binary, in the order
the runs come, so A and B alternate on the same rig.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from celery import Task
from pydantic import ValidationError

from runners import pipeline
from runners.builds.build import BuildResult, BuildSpec, SourceErrors, build
from runners.builds.releases import ReleaseSource, release_number
from runners.celery_app import RigEnv, app
from runners.delivery.nightly_schema import BuildReport, BuiltFields, DispatchRun, NightlyDispatch, RunReport
from runners.delivery.schema_types import field_errors
from runners.env import build_cache_dir
from runners.harness.server import ServerError

logger = logging.getLogger(__name__)

TASK_NAME = "rigboard.nightly_build_and_bench"
ENGINE = "llama.cpp"

RunJob = Callable[[Mapping[str, Any]], pipeline.JobResult]


def run_config(
    entry: Mapping[str, Any], *, built: BuildResult, flags: str, env: RigEnv, service_url: str
) -> dict[str, Any]:
    """Return the runner config for one reference run on the new binary: the
    reference spec with server.binary set to the build, the stack tagged with
    the commit, and the rig's own service URL / token / name."""
    config = dict(entry.get("config") or {})
    server = dict(config.get("server") or {})
    server["binary"] = built.binary_path
    config["server"] = server
    config["stack"] = {**dict(config.get("stack") or {}), "engine": ENGINE, "build": built.commit, "build_flags": flags}
    config["service"] = {"url": env.service_url or service_url, "token": env.token, "rig": env.rig}
    if env.spool_dir:
        config["service"]["spool_dir"] = env.spool_dir
    config["run_uuid"] = str(entry.get("run_uuid") or "")
    if env.runs_dir and config["run_uuid"]:
        config["output_path"] = str(Path(env.runs_dir).expanduser() / f"{config['run_uuid']}.json")
    return config


def nightly_build_and_bench(
    spec: Mapping[str, Any],
    *,
    env: RigEnv,
    cache_dir: Path | None = None,
    run_job: RunJob = pipeline.run_job,
) -> dict[str, Any]:
    """Build, benchmark, and return the report for the service.

    ``spec`` is a NightlyDispatch and the report a BuildReport as JSON
    (runners/delivery/nightly_schema.py). A failed build skips the benchmarks;
    a run that fails is reported failed, with the server's failure kind when
    llama-server would not start, and the others still run. Raise ValueError
    for a spec without a build id to answer to."""
    try:
        dispatch = NightlyDispatch.model_validate(dict(spec))
    except ValidationError as exc:
        given = spec.get("build")
        build_id = given.get("id") if isinstance(given, Mapping) else None
        if not isinstance(build_id, int):
            raise ValueError(f"nightly spec refused: {field_errors(exc)}") from exc
        return BuildReport(build_id=build_id, status="error", error=f"spec refused: {field_errors(exc)}").as_message()
    info = dispatch.build
    report = BuildReport(build_id=info.id, status="error")
    try:
        build_spec = BuildSpec.from_flags_string(
            repo_url=info.repo_url, commit=info.commit, flags=info.flags, jobs=info.jobs, source=info.source
        )
        built = build(build_spec, cache_dir or build_cache_dir())
    except (*SourceErrors, ValueError, OSError) as exc:
        report.error = f"{type(exc).__name__}: {exc}"
        return report.as_message()
    report.build = BuiltFields.model_validate(built.as_dict())
    report.status = "built" if built.ok else "failed"
    if not built.ok:
        return report.as_message()
    others: dict[str, BuildResult | str] = {}
    started = time.monotonic()
    for entry in dispatch.runs:
        report.runs.append(_run(entry, built, build_spec, others, dispatch, env, cache_dir, run_job))
    report.bench_time_s = round(time.monotonic() - started, 3)
    return report.as_message()


def _run(
    entry: DispatchRun,
    built: BuildResult,
    build_spec: BuildSpec,
    others: dict[str, BuildResult | str],
    dispatch: NightlyDispatch,
    env: RigEnv,
    cache_dir: Path | None,
    run_job: RunJob,
) -> RunReport:
    """Make one dispatched run on its binary (another commit's, built once, for an A side); return its report."""

    def failed(error: str, failure_kind: str = "") -> RunReport:
        return RunReport(
            build_run_id=entry.build_run_id, run_uuid=entry.run_uuid, status="failed", delivered="not_posted",
            error=error, failure_kind=failure_kind,
        )  # fmt: skip

    try:
        binary = built
        if entry.commit and entry.commit != built.commit:
            if entry.commit not in others:
                others[entry.commit] = _build_other(build_spec, entry.commit, cache_dir or build_cache_dir())
            found = others[entry.commit]
            if isinstance(found, str):
                return failed(found, "baseline_build")
            binary = found
        config = run_config(
            entry.model_dump(), built=binary, flags=dispatch.build.flags, env=env, service_url=dispatch.service_url
        )
        result = run_job(config)
    except ServerError as exc:  # llama-server would not start: the rig names why
        logger.warning("nightly run %s: %s", entry.name, exc)
        return failed(exc.reason, exc.kind)
    except Exception as exc:  # one broken reference config must not cost the others their runs
        logger.exception("nightly run %s failed", entry.name)
        return failed(f"{type(exc).__name__}: {exc}")
    ended = {"status": result.status, "delivered": result.delivered, "error": result.failure_reason}
    return RunReport.model_validate({"build_run_id": entry.build_run_id, "run_uuid": entry.run_uuid, **ended})


def _build_other(spec: BuildSpec, commit: str, cache_dir: Path) -> BuildResult | str:
    """Return the build of ``commit`` with ``spec``'s flags (a release from the
    same kind of source as ``spec``'s), or why there is none."""
    source = spec.source if release_number(commit) is not None else ReleaseSource.GIT
    try:
        other = build(
            BuildSpec(repo_url=spec.repo_url, commit=commit, flags=spec.flags, jobs=spec.jobs, source=source), cache_dir
        )
    except (*SourceErrors, ValueError, OSError) as exc:
        return f"baseline build {commit[:10]}: {type(exc).__name__}: {exc}"
    return other if other.ok else f"baseline build {commit[:10]} failed"


@app.task(bind=True, name=TASK_NAME, acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def nightly_task(self: Task, spec: dict[str, Any]) -> dict[str, Any]:
    """Run the nightly build + benchmarks for ``spec`` and send the report to
    the service's ``report_task``. Return the report (for the worker's log)."""
    report = nightly_build_and_bench(spec, env=RigEnv.read())
    defaults = NightlyDispatch.model_fields
    app.send_task(
        str(spec.get("report_task") or defaults["report_task"].default),
        args=[report],
        queue=str(spec.get("report_queue") or defaults["report_queue"].default),
        retry=True,
        retry_policy={"max_retries": 10, "interval_start": 1, "interval_step": 5, "interval_max": 30},
    )
    return {k: v for k, v in report.items() if k != "build"}

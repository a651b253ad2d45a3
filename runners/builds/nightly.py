"""The rig-side nightly task: build llama-server at the commit the service
found, benchmark each reference configuration with it, report back.

Registered by name (``rigboard.nightly_build_and_bench``) on the rig's Celery
app; the service sends it with ``send_task`` to ``rig.<name>`` and a JSON spec
(leaderboard/regressions/services/detection.py ``build_dispatch_spec``). Runs
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

from runners import pipeline
from runners.builds.build import BuildResult, BuildSpec, SourceErrors, build
from runners.builds.releases import ReleaseSource, release_number
from runners.celery_app import RigEnv, app
from runners.env import build_cache_dir

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
    return config


def nightly_build_and_bench(
    spec: Mapping[str, Any],
    *,
    env: RigEnv,
    cache_dir: Path | None = None,
    run_job: RunJob = pipeline.run_job,
) -> dict[str, Any]:
    """Build, benchmark, and return the report for the service.

    The report is ``{"build_id", "status" (built|failed|error), "error",
    "build": BuildResult as a dict or {}, "runs": [{"build_run_id",
    "run_uuid", "status", "delivered", "error"}], "bench_time_s"}``. A failed
    build skips the benchmarks; a run that fails is reported failed and the
    others still run. ``bench_time_s`` is the wall time of the runs (baseline
    builds an A/B pair needs included: they are part of measuring)."""
    info = spec["build"]
    report: dict[str, Any] = {"build_id": info["id"], "status": "error", "error": "", "build": {}, "runs": []}
    try:
        build_spec = BuildSpec.from_flags_string(
            repo_url=info["repo_url"],
            commit=info["commit"],
            flags=info.get("flags") or "",
            jobs=info.get("jobs") or 2,
            source=info.get("source") or "git",
        )
        built = build(build_spec, cache_dir or build_cache_dir())
    except (*SourceErrors, ValueError, OSError) as exc:
        report["error"] = f"{type(exc).__name__}: {exc}"
        return report
    report["build"] = built.as_dict()
    report["status"] = built.status
    if not built.ok:
        return report
    others: dict[str, BuildResult | str] = {}
    started = time.monotonic()
    for entry in spec.get("runs") or []:
        row: dict[str, Any] = {"build_run_id": entry.get("build_run_id"), "run_uuid": entry.get("run_uuid")}
        try:
            binary = built
            other = str(entry.get("commit") or "")
            if other and other != built.commit:
                if other not in others:
                    others[other] = _build_other(build_spec, other, cache_dir or build_cache_dir())
                found = others[other]
                if isinstance(found, str):
                    row.update(status="failed", delivered="not_posted", error=found)
                    report["runs"].append(row)
                    continue
                binary = found
            config = run_config(
                entry, built=binary, flags=info.get("flags") or "", env=env, service_url=spec.get("service_url") or ""
            )
            result = run_job(config)
            row.update(status=result.status, delivered=result.delivered, error=result.failure_reason)
        except Exception as exc:  # one broken reference config must not cost the others their runs
            logger.exception("nightly run %s failed", entry.get("name"))
            row.update(status="failed", delivered="not_posted", error=f"{type(exc).__name__}: {exc}")
        report["runs"].append(row)
    report["bench_time_s"] = round(time.monotonic() - started, 3)
    return report


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
    app.send_task(
        str(spec.get("report_task") or "regressions.build_report"),
        args=[report],
        queue=str(spec.get("report_queue") or "celery"),
        retry=True,
        retry_policy={"max_retries": 10, "interval_start": 1, "interval_step": 5, "interval_max": 30},
    )
    return {k: v for k, v in report.items() if k != "build"}

"""A replay as one JSON document (``rigboard-replay/1``), for benchmarks/: per
release its build (times, cache), the verdicts with their figures and
confirmation, and every run's raw per-repetition decode samples, so the
figures can be re-totalled without the database."""

from __future__ import annotations

from pathlib import PurePath
from typing import Any

from leaderboard.regressions.models import BuildRecord, BuildRun, Replay, Verdict
from leaderboard.results.models import Run
from runners.builds.releases import release_url

REPLAY_FORMAT = "rigboard-replay/1"


def _verdict(v: Verdict) -> dict[str, Any]:
    return {
        "reference": v.reference_config.name,
        "kind": v.kind,
        "confirmation": v.confirmation,
        "effect_pct": v.effect_pct,
        "p_value": v.p_value,
        "noise_spread_pct": v.noise_spread_pct,
        "noise_floor_pct": v.noise_floor_pct,
        "ab": {
            "n_pairs": v.ab_n_pairs,
            "effect_pct": v.ab_effect_pct,
            "ci_pct": [v.ab_ci_low_pct, v.ab_ci_high_pct],
            "p_value": v.ab_p_value,
            "spread_pct": v.ab_spread_pct,
            "design": v.ab_design,
            "contention": v.ab_contention,
            "blocks": v.ab_blocks,
        },
        "window": [v.commit_from, v.commit_to],
        "bisect": {
            "status": v.bisect_status,
            "release_window": [v.release_window_from, v.release_window_to],
            "first_bad": v.first_bad_commit,
        },
    }


def _runs(build: BuildRecord) -> list[dict[str, Any]]:
    build_runs = list(BuildRun.objects.filter(build=build).select_related("reference_config").order_by("id"))
    runs = {r.uuid: r for r in Run.objects.filter(uuid__in=[br.run_uuid for br in build_runs])}
    out = []
    for br in build_runs:
        run = runs.get(br.run_uuid)
        out.append(
            {
                "reference": br.reference_config.name,
                "role": br.role,
                "binary_of": br.run_commit or build.commit,
                "status": br.status,
                "run_uuid": str(br.run_uuid),
                "decode_tokens_per_s": run.build_decode_samples() if run is not None else [],
            }
        )
    return out


def _public_spec(spec: dict[str, Any]) -> dict[str, Any]:
    """Return ``spec`` with its model named by file name only (no path of the recording machine)."""
    server = dict(spec.get("server") or {})
    if server.get("model"):
        server["model"] = PurePath(str(server["model"])).name
    server.pop("binary", None)
    return {**spec, "server": server}


def replay_document(replay: Replay) -> dict[str, Any]:
    """Return the replay with its releases, oldest first (module doc)."""
    sub = replay.subscription
    releases = []
    for step in replay.steps.select_related("build").order_by("release"):
        build = step.build
        entry: dict[str, Any] = {
            "release": step.release,
            "url": release_url(step.release),
            "state": step.state,
            "queued_at": step.queued_at.isoformat() if step.queued_at else None,
            "settled_at": step.settled_at.isoformat() if step.settled_at else None,
            "load_1m": [step.load_1m_min, step.load_1m_max],
        }
        if build is not None:
            verdicts = build.verdicts.select_related("reference_config").order_by("id")
            entry["build"] = {
                "status": build.status,
                "build_time_s": build.build_time_s,
                "cached": build.cached,
                "bench_time_s": build.bench_time_s,
                "compiler": build.compiler,
                "error": build.error,
            }
            entry["verdicts"] = [_verdict(v) for v in verdicts]
            entry["runs"] = _runs(build)
        releases.append(entry)
    return {
        "format": REPLAY_FORMAT,
        "rig": sub.rig.name,
        "repo_url": sub.repo_url,
        "release_source": sub.release_source,
        "build_flags": sub.build_flags,
        "label": replay.label,
        "references": [{"name": r.name, "spec": _public_spec(r.spec)} for r in sub.reference_configs.order_by("name")],
        "releases": releases,
    }

"""The run JSON of docs/api.md, assembled from what the pipeline measured."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from runners.config import RigConfig
from runners.measure import Sample
from runners.server import ServerHandle
from runners.sweep import SweepPoint, sweep_deltas
from runners.workload import Workload

HARNESS = "rigboard-runner/1"
_ARCHITECTURES = {"dense", "moe", "hybrid", "unknown"}


def iso(moment: dt.datetime) -> str:
    return moment.astimezone(dt.UTC).isoformat().replace("+00:00", "Z")


def quantization_from_ftype(ftype: str) -> str:
    """Return 'Q4_K_M' for llama.cpp's 'Q4_K - Medium', the text unchanged otherwise."""
    for suffix, short in ((" - Medium", "_M"), (" - Small", "_S"), (" - Large", "_L")):
        if ftype.endswith(suffix):
            return ftype[: -len(suffix)] + short
    return ftype


def model_file_payload(config: RigConfig, server: ServerHandle, fingerprint: dict[str, Any]) -> dict[str, Any]:
    path = config.server.model if config.server else ""
    local = fingerprint.get("model") or {}
    n_params = server.model_meta.get("n_params")
    architecture = config.model.architecture or "unknown"
    return {
        "name": config.model.name or (Path(path).stem if path else server.model_id) or "unknown",
        "repo": config.model.repo,
        "architecture": architecture if architecture in _ARCHITECTURES else "unknown",
        "total_params_b": config.model.total_params_b
        or (round(n_params / 1e9, 3) if isinstance(n_params, int | float) else None),
        "active_params_b": config.model.active_params_b,
        "quantization": config.model.quantization
        or quantization_from_ftype(str(server.props.get("model_ftype") or "")),
        "weight_format": config.model.weight_format or ("GGUF" if path.endswith(".gguf") else ""),
        "file_size_bytes": local.get("file_size_bytes"),
        "sha256": local.get("sha256", ""),
    }


def configuration_payload(config: RigConfig, server: ServerHandle, workload: Workload) -> dict[str, Any]:
    sampling = {
        "thinking": workload.thinking,
        "temperature": workload.temperature,
        "top_k": workload.top_k,
        "top_p": workload.top_p,
        "min_p": workload.min_p,
        "command_line": server.command_line,
    }
    s = config.server
    if s is None:
        return {"ctx_size": server.n_ctx, "speculative_type": "unknown", "extra_args": [], **sampling}
    return {
        "ctx_size": server.n_ctx or s.ctx_size,
        "cache_type_k": s.cache_type_k,
        "cache_type_v": s.cache_type_v,
        "batch_size": s.batch_size,
        "ubatch_size": s.ubatch_size,
        "parallel": s.parallel,
        "flash_attn": s.flash_attn,
        "n_gpu_layers": s.n_gpu_layers,
        "tensor_split": s.tensor_split,
        "tensor_overrides": "\n".join(s.tensor_overrides),
        "threads": s.threads,
        "speculative_type": s.speculative_type(),
        "draft_model": Path(s.draft_model).name if s.draft_model else "",
        "draft_n_max": s.draft_n_max,
        "extra_args": list(s.extra_args),
        **sampling,
    }


def build_payload(
    *,
    config: RigConfig,
    run_uuid: str,
    status: str,
    failure_reason: str,
    started_at: dt.datetime,
    finished_at: dt.datetime,
    server: ServerHandle,
    workload: Workload,
    samples: list[Sample],
    warmups: list[Sample],
    points: list[SweepPoint],
    fingerprint: dict[str, Any],
    log_tail: str,
    power_reason: str | None,
) -> dict[str, Any]:
    """Return the POST /api/runs/ body."""
    return {
        "uuid": run_uuid,
        "rig": config.service.rig,
        "status": status,
        "failure_reason": failure_reason,
        "started_at": iso(started_at),
        "finished_at": iso(finished_at),
        "notes": config.notes,
        "stack": {
            "engine": config.stack.engine or server.engine,
            "build": config.stack.build or server.build,
            "build_flags": config.stack.build_flags,
            "image": config.stack.image,
        },
        "model_file": model_file_payload(config, server, fingerprint),
        "configuration": configuration_payload(config, server, workload),
        "workload": workload.payload(),
        "fingerprint": fingerprint,
        "server_log_tail": log_tail,
        "extra": {
            "harness": HARNESS,
            "n_ctx": server.n_ctx,
            "power_unavailable_reason": power_reason,
            "warmups": [w.payload() for w in warmups],
            "power": [s.power for s in samples],
            "cached_prompt_tokens": [s.cached_prompt_tokens for s in samples],
            "sweep_deltas": sweep_deltas(points),
        },
        "samples": [s.payload() for s in samples],
        "sweep_points": [p.payload() for p in points],
    }

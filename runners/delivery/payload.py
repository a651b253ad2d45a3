"""The run JSON of docs/api.md, assembled from what the pipeline measured."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from runners.config import RigConfig
from runners.harness.concurrency import LevelResult
from runners.harness.measure import Sample
from runners.harness.server import ServerHandle
from runners.harness.sweep import SweepPoint, sweep_deltas
from runners.harness.workload import Workload

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


def _billions(count: Any) -> float | None:
    return round(count / 1e9, 3) if isinstance(count, int | float) and count > 0 else None


def _given(value: Any, fallback: Any) -> Any:
    return value if value not in (None, "") else fallback


def model_file_payload(config: RigConfig, server: ServerHandle, fingerprint: dict[str, Any]) -> dict[str, Any]:
    """Return the run's ``model_file``: what [model] gives, and for each field it
    leaves empty what the model file's GGUF header tells (architecture from the
    expert count, parameters from the tensor shapes, experts, layers, quantization),
    then what llama-server's /props and /v1/models tell."""
    path = server.model_path or (config.server.model if config.server else "")
    local = fingerprint.get("model") or {}
    header: dict[str, Any] = local.get("gguf") or (server.gguf.as_dict() if server.gguf else {})
    given = config.model
    architecture = given.architecture or header.get("kind") or "unknown"
    total_b = _given(given.total_params_b, _billions(header.get("total_params") or server.model_meta.get("n_params")))
    active_b = given.active_params_b
    if active_b is None and header.get("kind") == "moe":
        active_b = _billions(header.get("active_params"))
        if active_b is not None and total_b is not None and active_b > total_b:
            active_b = None  # the header's estimate against a total given by hand: keep what was given
    return {
        "name": given.name or (Path(path).stem if path else server.model_id) or "unknown",
        "repo": given.repo,
        "architecture": architecture if architecture in _ARCHITECTURES else "unknown",
        "total_params_b": total_b,
        "active_params_b": active_b,
        "experts_total": _given(given.experts_total, header.get("expert_count") or None),
        "experts_active": _given(given.experts_active, header.get("expert_used_count") or None),
        "layers": _given(given.layers, header.get("block_count")),
        "quantization": given.quantization
        or header.get("quantization")
        or quantization_from_ftype(str(server.props.get("model_ftype") or "")),
        "weight_format": given.weight_format or ("GGUF" if header or path.endswith(".gguf") else ""),
        "file_size_bytes": local.get("file_size_bytes"),
        "sha256": local.get("sha256", ""),
    }


def model_fingerprint(fingerprint: dict[str, Any], server: ServerHandle) -> dict[str, Any]:
    """Return ``fingerprint`` with the server's model header facts when it has none of
    its own (attach mode: the model path came from the server, not the config)."""
    if fingerprint.get("model") or not server.model_path or not (server.gguf or server.gguf_error):
        return fingerprint
    model: dict[str, Any] = {"file_name": Path(server.model_path).name}
    if server.gguf is not None:
        model["gguf"] = server.gguf.as_dict()
    else:
        model["gguf_error"] = server.gguf_error
    return {**fingerprint, "model": model}


def configuration_payload(config: RigConfig, server: ServerHandle, workload: Workload) -> dict[str, Any]:
    # What the server's API was not sent (see ServerHandle.adapt) it chose itself: unknown.
    sent = server.adapt({"top_k": workload.top_k, "min_p": workload.min_p, "chat_template_kwargs": {}})
    sampling = {
        "thinking": workload.thinking if "chat_template_kwargs" in sent else None,
        "temperature": workload.temperature,
        "top_k": sent.get("top_k"),
        "top_p": workload.top_p,
        "min_p": sent.get("min_p"),
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
    finished_at: dt.datetime | None,
    server: ServerHandle,
    workload: Workload,
    samples: list[Sample],
    warmups: list[Sample],
    points: list[SweepPoint],
    fingerprint: dict[str, Any],
    log_tail: str,
    power_reason: str | None,
    levels: list[LevelResult] | None = None,
) -> dict[str, Any]:
    """Return the POST /api/runs/ body (``finished_at`` None for a run still running)."""
    return {
        "uuid": run_uuid,
        "rig": config.service.rig,
        "status": status,
        "failure_reason": failure_reason,
        "started_at": iso(started_at),
        "finished_at": iso(finished_at) if finished_at is not None else None,
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
        "fingerprint": model_fingerprint(fingerprint, server),
        "server_log_tail": log_tail,
        "extra": {
            "harness": HARNESS,
            "n_ctx": server.n_ctx,
            "power_unavailable_reason": power_reason,
            "warmups": [w.payload() for w in warmups],
            "power": [s.power for s in samples],
            "cached_prompt_tokens": [s.cached_prompt_tokens for s in samples],
            # Per sample: timings (llama.cpp), usage (the stream's usage) or chunks (counted).
            "tokens_generated_source": [s.tokens_source for s in samples],
            "server_api": server.api,
            # Why figures the server did not give are null (e.g. no server timings).
            "server_unavailable": dict(server.unavailable),
            "sweep_deltas": sweep_deltas(points),
        },
        "samples": [s.payload() for s in samples],
        "sweep_points": [p.payload() for p in points],
        "concurrency_levels": [level.payload() for level in levels or []],
    }

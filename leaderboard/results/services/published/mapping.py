"""The published results file's report → run_create's keyword arguments: pure mapping,
no writes. Every value is checked as it is read; a value that cannot be stored as printed
raises PublishedDataError naming the report and field.

Mapping decisions (the file's wording → Rigboard's columns):
- engine: a known name maps to Engine (case-insensitive: 'vLLM' → vllm, 'cloud API' →
  cloud-api); null (not stated by the article) → 'other'. An unknown name is an error.
- speculative: null (not stated) → 'unknown', never 'none'.
- a workload the article does not name → ``as-published``: its comparison key then
  differs from measured space-invaders runs, which is right (unknown prompt and settings).
- the per-run figure an article printed is what the author's server or script printed, so
  it is stored as ``decode_tokens_per_s_server``; the client-side column stays empty.
- with per-run rows the summary is computed from them (``summary_source='samples'``); without,
  the article's summary is stored (``'published'``), or none at all when it printed none.
- sizes printed in GB are stored as bytes with GB = 10⁹.
- every report is also kept verbatim in ``Run.extra['published']['report']`` (per-report rig
  and stack notes, technique.other, a month-only date, …), so nothing in the file is lost.
"""

from __future__ import annotations

import hashlib
import json
import math
import uuid
from collections.abc import Iterable, Mapping
from typing import Any

from leaderboard.results.models import (
    Architecture,
    Engine,
    Provenance,
    RunStatus,
    Source,
    SpeculativeType,
    SummarySource,
)

FORMAT = "published-results/1"
# Part of every report's content hash: bump it when the mapping below changes, so the next
# import re-stores reports that were imported under the old mapping.
IMPORTER_VERSION = 2
RUN_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "urn:rigboard:published-results")
AS_PUBLISHED_WORKLOAD = "as-published"
AS_PUBLISHED_DESCRIPTION = "Figures as an article published them; the article names no standard workload."
GB = 10**9  # articles print sizes in GB; ModelFile stores bytes

ENGINES = {
    "llama.cpp": Engine.LLAMA_CPP,
    "ik_llama.cpp": Engine.IK_LLAMA_CPP,
    "vllm": Engine.VLLM,
    "ollama": Engine.OLLAMA,
    "sglang": Engine.SGLANG,
    "beellama": Engine.BEELLAMA,
    "cloud api": Engine.CLOUD_API,
}
ARCHITECTURES = {
    "dense": Architecture.DENSE,
    "moe": Architecture.MOE,
    "hybrid": Architecture.HYBRID,
    "hybrid-deltanet-moe": Architecture.HYBRID,
}
# The published summary's names → Run's summary columns.
SUMMARY_COLUMNS = {
    "decode_tokens_per_s_avg": "decode_tokens_per_s_mean",
    "decode_tokens_per_s_stdev": "decode_tokens_per_s_stdev",
    "decode_tokens_per_s_range": "decode_tokens_per_s_range",
    "prefill_tokens_per_s": "prefill_tokens_per_s_mean",
    "ttft_ms": "ttft_ms_mean",
    "draft_acceptance_pct": "acceptance_pct",
    "power_w": "power_w_mean",
    "tokens_per_kwh": "tokens_per_kwh",
}


class PublishedDataError(ValueError):
    """The file is not what this importer understands; the message says where."""


def read_text(value: Any, where: str) -> str:
    """Return ``value`` as text ('' for null); raise PublishedDataError for anything else."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise PublishedDataError(f"{where}: expected text, got {value!r}")
    return value


def read_number(value: Any, where: str) -> float | None:
    """Return ``value`` as printed (int or float; None for null); raise PublishedDataError
    for text, booleans and non-finite values (json.loads accepts NaN)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise PublishedDataError(f"{where}: expected a number, got {value!r}")
    return value


def read_count(value: Any, where: str) -> int | None:
    """Return a whole number ≥ 0 (None for null); raise PublishedDataError otherwise."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise PublishedDataError(f"{where}: expected a whole number ≥ 0, got {value!r}")
    return value


def read_flag(value: Any, where: str) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    raise PublishedDataError(f"{where}: expected true, false or null, got {value!r}")


def read_choice(table: Mapping[str, str], value: Any, default: str, where: str) -> str:
    """Return ``table``'s value for ``value`` (case-insensitive), ``default`` for null;
    raise PublishedDataError for a value the table does not know."""
    if value is None:
        return default
    try:
        return table[read_text(value, where).lower()]
    except KeyError:
        raise PublishedDataError(f"{where}: unknown value {value!r}") from None


def content_digest(payload: Any) -> str:
    return hashlib.sha256(json.dumps(payload, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def report_run_uuid(report_id: str) -> uuid.UUID:
    """Return the uuid of the run a report is imported as (stable across imports)."""
    return uuid.uuid5(RUN_NAMESPACE, report_id)


def first_given(values: Iterable[Any]) -> Any:
    """Return the first value that is not null or ''; None if there is none."""
    return next((v for v in values if v not in (None, "")), None)


def run_create_kwargs(report: Mapping[str, Any], content_sha256: str, source: Source) -> dict[str, Any]:
    """Return run_create's keyword arguments (all but ``rig``) for one report."""
    rid = report["id"]
    where = f"report {rid}"
    stack, model, technique = report["stack"], report["model"], report["technique"]
    config, workload, summary = report["config"], report["workload"], report["summary"]
    sampling = config.get("sampling") or {}
    kv_cache = read_text(technique.get("kv_cache_type"), f"{where}: technique.kv_cache_type")
    file_size_gb = read_number(model.get("file_size_gb"), f"{where}: model.file_size_gb")
    tensor_split = config.get("tensor_split")
    engine = read_choice(ENGINES, stack.get("engine"), Engine.OTHER, f"{where}: stack.engine")
    stack_notes = read_text(stack.get("notes"), f"{where}: stack.notes")
    workload_name = read_text(workload.get("name"), f"{where}: workload.name")
    warmup = workload.get("warmup")
    description = read_text(workload.get("prompt_summary"), f"{where}: workload.prompt_summary")
    if isinstance(warmup, str):
        # Warmup printed in words ('none beyond model load') is not a repetition count.
        description = f"{description} Warmup: {warmup}.".strip()
        warmup = None

    samples = []
    for row in report["runs"]:
        row_where = f"{where}: runs[{row.get('run')}]"
        drafted = read_count(row.get("draft_n"), f"{row_where}.draft_n")
        accepted = read_count(row.get("draft_accepted"), f"{row_where}.draft_accepted")
        if drafted is not None and accepted is not None and accepted > drafted:
            raise PublishedDataError(f"{row_where}: draft_accepted {accepted} > draft_n {drafted}")
        samples.append(
            {
                "index": read_count(row["run"], f"{row_where}.run"),
                # The article's per-run figure is what the author's llama-server (or script)
                # printed, not a client-side wall-clock measurement, so it is the server column.
                "decode_tokens_per_s_server": read_number(row["decode_tokens_per_s"], f"{row_where}.decode"),
                "draft_n": drafted,
                "draft_n_accepted": accepted,
            }
        )

    sweep_points = []
    for point in report["context_sweep"]:
        pw = f"{where}: context_sweep[{point.get('ctx_label')}]"
        note_parts = [read_text(point.get("note"), f"{pw}.note")]
        delta = read_number(point.get("delta_vs_baseline_pct"), f"{pw}.delta_vs_baseline_pct")
        if delta is not None:
            note_parts.append(f"delta_vs_baseline_pct: {delta:+g}")
        values = {
            "ctx_tokens": read_count(point.get("ctx_tokens"), f"{pw}.ctx_tokens"),
            "ctx_label": read_text(point.get("ctx_label"), f"{pw}.ctx_label"),
            "prefill_tokens_per_s": read_number(point.get("prefill_tokens_per_s"), f"{pw}.prefill_tokens_per_s"),
            "decode_tokens_per_s": read_number(point.get("decode_tokens_per_s"), f"{pw}.decode_tokens_per_s"),
            "ttft_ms": read_number(point.get("ttft_ms"), f"{pw}.ttft_ms"),
            "power_w": read_number(point.get("power_w"), f"{pw}.power_w"),
            "tokens_per_kwh": read_number(point.get("decode_tokens_per_kwh"), f"{pw}.decode_tokens_per_kwh"),
            "note": "; ".join(p for p in note_parts if p),
        }
        # An article that prints only '198K' gives no token count, and none is
        # invented: such a point is stored with ctx_tokens null and its label.
        sweep_points.append(values)

    run: dict[str, Any] = {
        "uuid": report_run_uuid(rid),
        "status": RunStatus.FINISHED,
        "provenance": Provenance.REPORTED,
        "source": source,
        "report_key": rid,
        "notes": read_text(report.get("notes"), f"{where}: notes"),
        "cost_usd_per_mtok": read_number(summary.get("cost_usd_per_mtok"), f"{where}: summary.cost_usd_per_mtok"),
        "extra": {
            "published": {"format": FORMAT, "content_sha256": content_sha256, "report": report},
            "technique_other": list(technique.get("other") or []),
            "stack_notes": stack_notes,
            "rig_notes": read_text(report["rig"].get("notes"), f"{where}: rig.notes"),
            "workload_prompt_summary": read_text(workload.get("prompt_summary"), f"{where}: prompt_summary"),
        },
    }
    if not samples:
        published = {
            col: read_number(summary.get(name), f"{where}: summary.{name}") for name, col in SUMMARY_COLUMNS.items()
        }
        if any(v is not None for v in published.values()):
            run.update(published, summary_source=SummarySource.PUBLISHED)

    return {
        "stack": {
            "engine": engine,
            "build": read_text(stack.get("build"), f"{where}: stack.build"),
            "build_flags": " ".join(stack.get("build_flags") or []),
            "image": read_text(stack.get("image"), f"{where}: stack.image"),
            # Stack rows are shared; the 'other' row is the bucket for 'engine not stated',
            # which no one article's note describes (each run keeps its own in extra).
            "notes": stack_notes if engine != Engine.OTHER else "",
        },
        "model_file": {
            "name": read_text(model["name"], f"{where}: model.name"),
            "repo": read_text(model.get("repo"), f"{where}: model.repo"),
            "architecture": read_choice(
                ARCHITECTURES, model.get("architecture"), Architecture.UNKNOWN, f"{where}: model.architecture"
            ),
            "total_params_b": read_number(model.get("total_params_b"), f"{where}: model.total_params_b"),
            "active_params_b": read_number(model.get("active_params_b"), f"{where}: model.active_params_b"),
            "experts_total": read_count(model.get("experts_total"), f"{where}: model.experts_total"),
            "experts_active": read_count(model.get("experts_active"), f"{where}: model.experts_active"),
            "layers": read_count(model.get("layers"), f"{where}: model.layers"),
            "quantization": read_text(model.get("quant"), f"{where}: model.quant"),
            "weight_format": read_text(technique.get("weight_format"), f"{where}: technique.weight_format"),
            "file_size_bytes": round(file_size_gb * GB) if file_size_gb is not None else None,
        },
        "configuration": {
            "ctx_size": read_count(config.get("ctx_size"), f"{where}: config.ctx_size"),
            "cache_type_k": kv_cache,
            "cache_type_v": kv_cache,
            "batch_size": read_count(config.get("batch_size"), f"{where}: config.batch_size"),
            "ubatch_size": read_count(config.get("ubatch_size"), f"{where}: config.ubatch_size"),
            "parallel": read_count(config.get("parallel"), f"{where}: config.parallel"),
            "n_gpu_layers": read_count(config.get("n_gpu_layers"), f"{where}: config.n_gpu_layers"),
            # As llama-server's -ts takes it: '0.9,1,1,1,1,1'.
            "tensor_split": ",".join(json.dumps(v) for v in tensor_split) if tensor_split else "",
            "threads": read_count(config.get("threads"), f"{where}: config.threads"),
            "speculative_type": read_choice(
                {c.value: c.value for c in SpeculativeType},
                technique.get("speculative"),
                SpeculativeType.UNKNOWN,
                f"{where}: technique.speculative",
            ),
            "draft_n_max": read_count(technique.get("draft_n_max"), f"{where}: technique.draft_n_max"),
            "thinking": read_flag(config.get("thinking"), f"{where}: config.thinking"),
            "temperature": read_number(sampling.get("temperature"), f"{where}: sampling.temperature"),
            "top_k": read_count(sampling.get("top_k"), f"{where}: sampling.top_k"),
            "top_p": read_number(sampling.get("top_p"), f"{where}: sampling.top_p"),
            "min_p": read_number(sampling.get("min_p"), f"{where}: sampling.min_p"),
            "command_line": read_text(config.get("command_line"), f"{where}: config.command_line"),
        },
        "workload": {
            "name": workload_name or AS_PUBLISHED_WORKLOAD,
            "max_tokens": read_count(workload.get("max_tokens"), f"{where}: workload.max_tokens"),
            "repetitions": read_count(workload.get("runs"), f"{where}: workload.runs"),
            "warmup": read_count(warmup, f"{where}: workload.warmup"),
            # The shared as-published row must not carry one article's prompt description;
            # each run keeps its own in extra['workload_prompt_summary'].
            "description": description if workload_name else AS_PUBLISHED_DESCRIPTION,
        },
        "run": run,
        "samples": samples,
        "sweep_points": sweep_points,
    }

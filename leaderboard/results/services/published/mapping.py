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
- a sweep point with decode t/s and power but no tokens/kWh gets the tokens/kWh the article
  computed for its other points (decode t/s over power), its note saying so (seed 001's
  397B at 8K: 42.1 t/s at 852 W), so its electricity $/MTok follows as it does for printed ones.
- the run parts (stack, model file, configuration, workload, per-run rows, sweep points) are
  checked by the run payload's one definition (runners/delivery/schema.py), as a measured run is.
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

from pydantic import Field, ValidationError

from leaderboard.results.models import (
    Architecture,
    Engine,
    Provenance,
    RunStatus,
    Source,
    SpeculativeType,
    SummarySource,
)
from runners import stats
from runners.delivery import schema
from runners.delivery.schema_types import field_errors

FORMAT = "published-results/1"
# Part of every report's content hash: bump it when the mapping below changes, so the next
# import re-stores reports that were imported under the old mapping.
IMPORTER_VERSION = 3
RUN_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "urn:rigboard:published-results")
AS_PUBLISHED_WORKLOAD = "as-published"
AS_PUBLISHED_DESCRIPTION = "Figures as an article published them; the article names no standard workload."
GB = 10**9  # articles print sizes in GB; ModelFile stores bytes
DERIVED_TOKENS_PER_KWH = "tokens/kWh computed by Rigboard from the printed decode t/s and power (not printed)"

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


class PrintedNumber(float):
    """A number read from the file that keeps the digits it was printed with:
    ``249.30`` is the float 249.3 with ``printed == "249.30"`` (json.loads's
    ``parse_float``). Everything else sees a float: hashes and stored JSON are
    those of the plain number."""

    printed: str

    def __new__(cls, text: str) -> PrintedNumber:
        number = super().__new__(cls, text)
        number.printed = text
        return number


def load_printed(text: str) -> Any:
    """Return the file's JSON with every decimal number a PrintedNumber."""
    return json.loads(text, parse_float=PrintedNumber)


def printed_digits(item: Mapping[str, Any], names: Iterable[str]) -> dict[str, str]:
    """Return, for each of ``names`` that ``item`` gives as a decimal, the text it was
    printed as ('249.30'): what a page shows for a figure as printed."""
    return {name: value.printed for name in names if isinstance(value := item.get(name), PrintedNumber)}


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


class ReportedSweepPoint(schema.SweepPointInput):
    """A sweep point as an article printed it: an article that prints only '198K' gives
    no token count, and none is invented, so ``ctx_tokens`` may be null here (the
    point is stored with its label)."""

    ctx_tokens: schema.Whole | None = Field(default=None, ge=0, le=schema.MAX_TOKENS)  # type: ignore[assignment]


# The run payload's parts (runners/delivery/schema.py) → what the file calls them, for messages.
_FILE_PARTS = {"stack": "stack", "model_file": "model", "configuration": "config", "workload": "workload"}


def _checked(part: type[schema.Payload], data: dict[str, Any], where: str) -> dict[str, Any]:
    """Return ``data`` validated by the run payload's definition of ``part`` (the
    bounds, lengths and choices a measured run meets), numbers as printed; raise
    PublishedDataError naming each bad field."""
    try:
        checked = schema.validated(part, data)
    except ValidationError as exc:
        problems = "; ".join(f"{where}.{path}: {' '.join(why)}" for path, why in field_errors(exc).items())
        raise PublishedDataError(problems) from None
    # A figure keeps the form the article printed it in (27, not 27.0): the stored
    # configurations' hashes, and so the catalog rows, stay those of earlier imports.
    return {
        name: data[name] if type(data.get(name)) is int and type(value) is float and value == data[name] else value
        for name, value in checked.items()
    }


def _run_samples(report: Mapping[str, Any], where: str) -> list[dict[str, Any]]:
    samples = []
    for position, row in enumerate(report["runs"]):
        # The article's per-run figure is what the author's llama-server (or script)
        # printed, not a client-side wall-clock measurement, so it is the server column.
        sample = {
            "index": row["run"],
            "decode_tokens_per_s_server": row["decode_tokens_per_s"],
            "draft_n": row.get("draft_n"),
            "draft_n_accepted": row.get("draft_accepted"),
        }
        samples.append(_checked(schema.SampleInput, sample, f"{where}: runs.{position}"))
    return samples


def _run_sweep_points(report: Mapping[str, Any], where: str) -> list[dict[str, Any]]:
    sweep_points = []
    for position, point in enumerate(report["context_sweep"]):
        pw = f"{where}: context_sweep.{position}"
        note_parts = [read_text(point.get("note"), f"{pw}.note")]
        delta = read_number(point.get("delta_vs_baseline_pct"), f"{pw}.delta_vs_baseline_pct")
        if delta is not None:
            note_parts.append(f"delta_vs_baseline_pct: {delta:+g}")
        tokens_per_kwh = read_number(point.get("decode_tokens_per_kwh"), f"{pw}.decode_tokens_per_kwh")
        decode = read_number(point.get("decode_tokens_per_s"), f"{pw}.decode_tokens_per_s")
        power = read_number(point.get("power_w"), f"{pw}.power_w")
        if tokens_per_kwh is None and decode is not None and power:
            # The article's own rule for the points it did print (46.3 t/s at 818 W →
            # 203,854 tokens/kWh): one second's decode tokens over one second's energy.
            tokens_per_kwh = stats.tokens_per_kwh(decode, power)
            note_parts.append(DERIVED_TOKENS_PER_KWH)
        values = {
            "ctx_tokens": point.get("ctx_tokens"),
            "ctx_label": point.get("ctx_label"),
            "prefill_tokens_per_s": point.get("prefill_tokens_per_s"),
            "decode_tokens_per_s": point.get("decode_tokens_per_s"),
            "ttft_ms": point.get("ttft_ms"),
            "power_w": point.get("power_w"),
            "tokens_per_kwh": tokens_per_kwh,
            "note": "; ".join(p for p in note_parts if p),
        }
        sweep_points.append(_checked(ReportedSweepPoint, values, pw))
    return sweep_points


def run_create_kwargs(report: Mapping[str, Any], content_sha256: str, source: Source) -> dict[str, Any]:
    """Return run_create's keyword arguments (all but ``rig``) for one report.

    The mapping (the file's names and units → Rigboard's) is here; the values are
    checked by the run payload's one definition (runners/delivery/schema.py), as a measured
    run's are, part by part."""
    rid = report["id"]
    where = f"report {rid}"
    stack, model, technique = report["stack"], report["model"], report["technique"]
    config, workload, summary = report["config"], report["workload"], report["summary"]
    sampling = config.get("sampling") or {}
    kv_cache = technique.get("kv_cache_type")
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
    samples = _run_samples(report, where)
    if not samples:
        published = {
            col: read_number(summary.get(name), f"{where}: summary.{name}") for name, col in SUMMARY_COLUMNS.items()
        }
        if any(v is not None for v in published.values()):
            run.update(published, summary_source=SummarySource.PUBLISHED)

    parts = {
        "stack": {
            "engine": engine,
            "build": stack.get("build"),
            "build_flags": " ".join(stack.get("build_flags") or []),
            "image": stack.get("image"),
        },
        "model_file": {
            "name": model["name"],
            "repo": model.get("repo"),
            "architecture": read_choice(
                ARCHITECTURES, model.get("architecture"), Architecture.UNKNOWN, f"{where}: model.architecture"
            ),
            "total_params_b": model.get("total_params_b"),
            "active_params_b": model.get("active_params_b"),
            "experts_total": model.get("experts_total"),
            "experts_active": model.get("experts_active"),
            "layers": model.get("layers"),
            "quantization": model.get("quant"),
            "weight_format": technique.get("weight_format"),
            "file_size_bytes": round(file_size_gb * GB) if file_size_gb is not None else None,
        },
        "configuration": {
            "ctx_size": config.get("ctx_size"),
            "cache_type_k": kv_cache,
            "cache_type_v": kv_cache,
            "batch_size": config.get("batch_size"),
            "ubatch_size": config.get("ubatch_size"),
            "parallel": config.get("parallel"),
            "n_gpu_layers": config.get("n_gpu_layers"),
            # As llama-server's -ts takes it: '0.9,1,1,1,1,1'.
            "tensor_split": ",".join(json.dumps(v) for v in tensor_split) if tensor_split else "",
            "threads": config.get("threads"),
            "speculative_type": read_choice(
                {c.value: c.value for c in SpeculativeType},
                technique.get("speculative"),
                SpeculativeType.UNKNOWN,
                f"{where}: technique.speculative",
            ),
            "draft_n_max": technique.get("draft_n_max"),
            "thinking": config.get("thinking"),
            "temperature": sampling.get("temperature"),
            "top_k": sampling.get("top_k"),
            "top_p": sampling.get("top_p"),
            "min_p": sampling.get("min_p"),
            "command_line": config.get("command_line"),
        },
        "workload": {
            "name": workload_name or AS_PUBLISHED_WORKLOAD,
            "max_tokens": workload.get("max_tokens"),
            "repetitions": workload.get("runs"),
            "warmup": warmup,
        },
    }
    checked = {name: _checked(PARTS[name], data, f"{where}: {_FILE_PARTS[name]}") for name, data in parts.items()}
    # Stack rows are shared; the 'other' row is the bucket for 'engine not stated',
    # which no one article's note describes (each run keeps its own in extra).
    checked["stack"]["notes"] = stack_notes if engine != Engine.OTHER else ""
    # The shared as-published row must not carry one article's prompt description;
    # each run keeps its own in extra['workload_prompt_summary'].
    checked["workload"]["description"] = description if workload_name else AS_PUBLISHED_DESCRIPTION
    return {
        **checked,
        "run": run,
        "samples": samples,
        "sweep_points": _run_sweep_points(report, where),
    }


PARTS: dict[str, type[schema.Payload]] = {
    "stack": schema.StackInput,
    "model_file": schema.ModelFileInput,
    "configuration": schema.ConfigurationInput,
    "workload": schema.WorkloadInput,
}

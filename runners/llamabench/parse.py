"""llama-bench's own output (``-o json``, ``-o jsonl``, ``-o csv``) → Rigboard run payloads.

Each test row of a llama-bench file becomes one measured run (the payload of
``POST /api/runs/``, docs/api.md) with its raw per-repetition samples. Every
test is its own workload (``llama-bench tg128 @ d0``), so two runs are only
compared within one test, one depth: pp512 and tg128 never share a key.

The rig side (``python -m runners.llamabench``) and the service's import
endpoint both use :func:`parse` and :func:`row_payloads`; nothing here imports
Django. A file is taken whole or not at all: :func:`parse` collects every
error, each naming the row (0-based, in file order) and the field.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import uuid as uuid_lib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from runners.delivery.payload import quantization_from_ftype

FORMATS = ("json", "jsonl", "csv")
MAX_ROWS = 1000
# llama-bench prints avg_ts as the mean of samples_ts rounded to 6 digits; a
# row whose samples are off their own mean by more than this was edited.
SAMPLES_MEAN_TOLERANCE = 0.01
WORKLOAD_PREFIX = "llama-bench "
# Uuids of imported rows are derived from the row itself, so importing the same
# file twice stores nothing twice (the service answers 200 for a known uuid).
UUID_NAMESPACE = uuid_lib.UUID("0b7f3a52-6a1e-4c55-9d8e-3f0e2c1a9b64")

REQUIRED = (
    "build_commit",
    "build_number",
    "model_filename",
    "model_type",
    "model_size",
    "model_n_params",
    "n_prompt",
    "n_gen",
    "avg_ts",
    "samples_ts",
)
TEXT_FIELDS = ("build_commit", "cpu_info", "gpu_info", "backends", "model_filename", "model_type", "test_time")
INT_FIELDS = ("build_number", "model_size", "model_n_params", "n_prompt", "n_gen", "n_depth")
# Columns mapped to Rigboard's configuration (the rest are kept verbatim in extra_args).
CONFIG_MAP = {
    "n_gpu_layers": "n_gpu_layers",
    "n_threads": "threads",
    "n_batch": "batch_size",
    "n_ubatch": "ubatch_size",
    "type_k": "cache_type_k",
    "type_v": "cache_type_v",
}
# What identifies the run or its result rather than a flag.
NOT_FLAGS = frozenset(
    {*REQUIRED, *TEXT_FIELDS, "n_depth", "avg_ns", "stddev_ns", "stddev_ts", "samples_ns", "flash_attn"}
    | set(CONFIG_MAP)
    | {"tensor_split", "tensor_buft_overrides"}
)
_HTML_CHARS = frozenset("<>")


class LlamaBenchError(ValueError):
    """The file cannot be imported; ``errors`` maps ``rows.N.field`` (or ``file``) to reasons."""

    def __init__(self, errors: Mapping[str, list[str]]) -> None:
        self.errors = dict(errors)
        first = next(iter(self.errors.items()))
        super().__init__(
            f"{first[0]}: {first[1][0]}" + (f" (and {len(self.errors) - 1} more)" if len(errors) > 1 else "")
        )


@dataclass(frozen=True)
class BenchRow:
    """One llama-bench test: its raw columns as read and the samples in t/s."""

    position: int
    raw: dict[str, Any]
    samples_ts: tuple[float, ...]
    samples_ns: tuple[int, ...] = field(default=())
    # -o csv carries no per-repetition samples: its one sample is avg_ts, flagged.
    mean_only: bool = False

    @property
    def n_prompt(self) -> int:
        return int(self.raw["n_prompt"])

    @property
    def n_gen(self) -> int:
        return int(self.raw["n_gen"])

    @property
    def n_depth(self) -> int:
        return int(self.raw.get("n_depth") or 0)

    @property
    def test(self) -> str:
        """Return llama-bench's test name: pp512, tg128 or pp512+tg128."""
        parts = [f"pp{self.n_prompt}" if self.n_prompt else "", f"tg{self.n_gen}" if self.n_gen else ""]
        return "+".join(p for p in parts if p)

    @property
    def workload_name(self) -> str:
        return f"{WORKLOAD_PREFIX}{self.test} @ d{self.n_depth}"


def detect_format(text: str) -> str:
    """Return 'json', 'jsonl' or 'csv' from the text's first character; raise LlamaBenchError otherwise."""
    head = text.lstrip()
    if head.startswith("["):
        return "json"
    if head.startswith("{"):
        return "jsonl"
    if head.startswith('"build_commit"') or head.startswith("build_commit"):
        return "csv"
    raise LlamaBenchError(
        {
            "file": [
                "Not llama-bench output: expected -o json, -o jsonl or -o csv (a header starting with build_commit)."
            ]
        }
    )


def _read_rows(text: str, fmt: str) -> list[Any]:
    try:
        if fmt == "json":
            rows = json.loads(text)
            if not isinstance(rows, list):
                raise LlamaBenchError({"file": ["Not llama-bench output: a JSON list of test objects is expected."]})
            return rows
        if fmt == "jsonl":
            return [json.loads(line) for line in text.splitlines() if line.strip()]
    except ValueError as exc:
        raise LlamaBenchError({"file": [f"Not llama-bench output: malformed JSON ({exc})."]}) from None
    reader = csv.DictReader(io.StringIO(text))
    if not reader.fieldnames or "build_commit" not in reader.fieldnames:
        raise LlamaBenchError({"file": ["Not llama-bench output: the CSV header lacks build_commit."]})
    return [dict(row) for row in reader]


def _csv_value(name: str, value: Any) -> Any:
    """Return a CSV cell as the JSON output would have it (CSV has only text)."""
    if not isinstance(value, str):
        return value
    if name in ("samples_ts", "samples_ns"):
        return [float(v) for v in value.replace(";", " ").replace(",", " ").split()] if value.strip() else []
    if value.lstrip("-").isdigit() and name not in TEXT_FIELDS:
        return int(value)
    if name in ("avg_ts", "stddev_ts"):
        try:
            return float(value)
        except ValueError:
            return value
    return value


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _check_row(position: int, row: Any, errors: dict[str, list[str]], *, mean_only: bool = False) -> BenchRow | None:
    where = f"rows.{position}"
    if not isinstance(row, dict):
        errors[where] = ["A test row must be an object."]
        return None
    before = len(errors)
    for name in REQUIRED:
        if row.get(name) in (None, ""):
            errors[f"{where}.{name}"] = ["This field is missing."]
    for name in TEXT_FIELDS:
        value = row.get(name)
        if value is None:
            continue
        if not isinstance(value, str):
            errors[f"{where}.{name}"] = ["Text is expected."]
        elif _HTML_CHARS & set(value):
            errors[f"{where}.{name}"] = ["HTML is not allowed here ('<' or '>')."]
        elif "\x00" in value or len(value) > 500:
            errors[f"{where}.{name}"] = ["Text over 500 characters or with a null character."]
    for name in INT_FIELDS:
        value = row.get(name)
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
            errors.setdefault(f"{where}.{name}", ["A whole number ≥ 0 is expected."])
    if len(errors) > before:
        return None
    samples = row["samples_ts"]
    if not isinstance(samples, list) or not samples or not all(_number(s) and s > 0 for s in samples):
        errors[f"{where}.samples_ts"] = ["A non-empty list of positive numbers is expected."]
        return None
    samples_ns = row.get("samples_ns") or []
    if not isinstance(samples_ns, list) or not all(_number(s) and s > 0 for s in samples_ns):
        errors[f"{where}.samples_ns"] = ["A list of positive numbers is expected."]
        return None
    if samples_ns and len(samples_ns) != len(samples):
        errors[f"{where}.samples_ns"] = [f"{len(samples_ns)} samples, but samples_ts has {len(samples)}."]
        return None
    avg = row["avg_ts"]
    mean = sum(samples) / len(samples)
    if not _number(avg) or abs(mean - avg) > SAMPLES_MEAN_TOLERANCE * max(abs(avg), 1e-9):
        errors[f"{where}.avg_ts"] = [f"avg_ts {avg} disagrees with the mean of samples_ts ({mean:.6g})."]
        return None
    if mean_only:
        row = {k: v for k, v in row.items() if k != "samples_ts"}
    bench = BenchRow(position, row, tuple(float(s) for s in samples), tuple(int(s) for s in samples_ns), mean_only)
    if bench.n_prompt and bench.n_gen:
        errors[f"{where}.n_gen"] = [
            f"{bench.test}: a combined prompt+generation test (-pg) mixes prefill and decode in one t/s; "
            "run it as separate -p and -n tests."
        ]
        return None
    if not bench.n_prompt and not bench.n_gen:
        errors[f"{where}.n_prompt"] = ["Neither n_prompt nor n_gen is set: no test."]
        return None
    return bench


def parse(text: str, *, fmt: str | None = None, max_rows: int = MAX_ROWS) -> list[BenchRow]:
    """Return the test rows of llama-bench output ``text`` (format detected unless ``fmt``).

    Raise LlamaBenchError naming each bad row and field: not llama-bench output,
    a missing field, samples that disagree with their own average, more than
    ``max_rows`` rows, HTML in a text field, a combined pp+tg test."""
    fmt = fmt or detect_format(text)
    if fmt not in FORMATS:
        raise LlamaBenchError({"format": [f"{fmt!r} is not one of: {', '.join(FORMATS)}."]})
    rows = _read_rows(text, fmt)
    if not rows:
        raise LlamaBenchError({"file": ["No test rows."]})
    hallmarks = ("build_commit", "avg_ts", "n_prompt", "model_type")
    if not any(isinstance(row, dict) and any(k in row for k in hallmarks) for row in rows):
        raise LlamaBenchError({"file": [f"Not llama-bench output: no row has any of {', '.join(hallmarks)}."]})
    if len(rows) > max_rows:
        raise LlamaBenchError({"file": [f"{len(rows)} rows; at most {max_rows} per file."]})
    mean_only = False
    if fmt == "csv":
        rows = [{k: _csv_value(k, v) for k, v in row.items()} for row in rows]
        mean_only = "samples_ts" not in rows[0]
        if mean_only:
            rows = [{**row, "samples_ts": [row["avg_ts"]]} if _number(row.get("avg_ts")) else row for row in rows]
    errors: dict[str, list[str]] = {}
    checked = [_check_row(position, row, errors, mean_only=mean_only) for position, row in enumerate(rows)]
    if errors:
        raise LlamaBenchError(errors)
    return [row for row in checked if row is not None]


def _flash_attn(value: Any) -> str:
    # Older llama-bench prints a boolean, newer -1 (auto) / 0 / 1 (True == 1, False == 0).
    return {1: "on", 0: "off", -1: "auto"}.get(value, str(value) if value is not None else "")


def _model_type_parts(model_type: str) -> tuple[str, str]:
    """Return (architecture name, quantization) from llama-bench's 'gemma3 270M Q4_K - Medium'."""
    parts = model_type.split(" ", 2)
    if len(parts) < 3:
        return model_type, ""
    return parts[0], quantization_from_ftype(parts[2])


def _flag_text(value: Any) -> str:
    # CSV prints booleans as 0/1: JSON's true/false are written the same way, so
    # one run imported from either format has one configuration.
    return str(int(value)) if isinstance(value, bool) else str(value)


def configuration_payload(row: BenchRow) -> dict[str, Any]:
    """Return the run's ``configuration``: the flags Rigboard has fields for, the others
    verbatim in ``extra_args`` as ``name=value`` (they count in the configuration's hash)."""
    raw = row.raw
    config: dict[str, Any] = {target: raw.get(source) for source, target in CONFIG_MAP.items()}
    # llama-bench sizes its context to the test (prompt + generation + depth), which
    # the workload already names; left out, one invocation's tests share one
    # configuration, so two configurations compare over every test.
    config["ctx_size"] = None
    config["parallel"] = 1
    config["flash_attn"] = _flash_attn(raw.get("flash_attn"))
    split = str(raw.get("tensor_split") or "")
    config["tensor_split"] = "" if not split.strip("0./ ") else split
    overrides = str(raw.get("tensor_buft_overrides") or "")
    config["tensor_overrides"] = "" if overrides == "none" else overrides.replace(";", "\n")
    config["speculative_type"] = "none"
    config["extra_args"] = sorted(f"{k}={_flag_text(v)}" for k, v in raw.items() if k not in NOT_FLAGS)
    return config


def row_payload(row: BenchRow, *, rig: str, notes: str = "") -> dict[str, Any]:
    """Return the ``POST /api/runs/`` payload of one test row (a finished, measured run)."""
    raw = row.raw
    arch, quantization = _model_type_parts(raw["model_type"])
    build = f"b{raw['build_number']}-{raw['build_commit']}"
    samples: list[dict[str, Any]]
    if row.n_gen:
        samples = [
            {"index": i, "decode_tokens_per_s_server": ts, "tokens_generated": row.n_gen}
            for i, ts in enumerate(row.samples_ts, start=1)
        ]
    else:
        samples = [
            {"index": i, "prefill_tokens_per_s": ts, "prompt_tokens": row.n_prompt}
            for i, ts in enumerate(row.samples_ts, start=1)
        ]
    if row.mean_only:
        for sample in samples:
            sample["flags"] = ["llama-bench -o csv: the mean of the repetitions, no raw samples"]
    identity = json.dumps({"rig": rig, "row": raw}, sort_keys=True, default=str)
    payload: dict[str, Any] = {
        "uuid": str(uuid_lib.uuid5(UUID_NAMESPACE, identity)),
        "rig": rig,
        "status": "finished",
        "notes": notes,
        "stack": {"engine": "llama.cpp", "build": build, "build_flags": f"backends: {raw.get('backends') or ''}"},
        "model_file": {
            "name": os.path.basename(str(raw["model_filename"]).replace("\\", "/")),
            "quantization": quantization,
            "weight_format": "GGUF",
            "file_size_bytes": raw["model_size"],
            "total_params_b": round(raw["model_n_params"] / 1e9, 3) or None,
        },
        "configuration": configuration_payload(row),
        "workload": {
            "name": row.workload_name,
            "version": "1",
            "max_tokens": row.n_gen or None,
            "repetitions": None if row.mean_only else len(row.samples_ts),
        },
        "fingerprint": {
            "source": "llama-bench",
            "cpu": raw.get("cpu_info") or "",
            "gpu_info": raw.get("gpu_info") or "",
            "backends": raw.get("backends") or "",
            "build": build,
            "model_type": raw["model_type"],
            "architecture_name": arch,
        },
        "extra": {
            "llama_bench": {
                "test": row.test,
                "n_depth": row.n_depth,
                "avg_ts": raw.get("avg_ts"),
                "stddev_ts": raw.get("stddev_ts"),
                "avg_ns": raw.get("avg_ns"),
                "samples_ns": list(row.samples_ns),
                "test_time": raw.get("test_time") or "",
                "row": row.position,
                "mean_only": row.mean_only,
            }
        },
        "samples": samples,
        "sweep_points": [],
    }
    if raw.get("test_time"):
        payload["started_at"] = raw["test_time"]
    return payload


def row_payloads(rows: Sequence[BenchRow], *, rig: str, notes: str = "") -> list[dict[str, Any]]:
    """Return one run payload per row, in file order."""
    return [row_payload(row, rig=rig, notes=notes) for row in rows]

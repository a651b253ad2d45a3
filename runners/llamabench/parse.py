"""llama-bench's own output (``-o json``, ``-o jsonl``, ``-o csv``) → Rigboard run payloads.

Each test row of a llama-bench file becomes one measured run (the payload of
``POST /api/runs/``, docs/api.md) with its raw per-repetition samples. Every
test is its own workload (``llama-bench tg128 @ d0``), so two runs are only
compared within one test, one depth: pp512 and tg128 never share a key.

The rig side (``python -m runners.llamabench``) and the service's import
endpoint both use :func:`parse` and :func:`row_payloads`; nothing here imports
Django. A file is taken whole or not at all: :func:`parse` reads the file into
rows and hands them to ``row.checked_rows`` (each row checked against the one
definition of a llama-bench row), which collects every error, each naming the
row (0-based, in file order) and the field; a file that does not parse names
its line.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import uuid as uuid_lib
from collections.abc import Sequence
from typing import Any

from runners.delivery.payload import quantization_from_ftype
from runners.llamabench.row import WORKLOAD_PREFIX, BenchRow, LlamaBenchError, checked_rows

__all__ = ["WORKLOAD_PREFIX", "BenchRow", "LlamaBenchError", "parse", "row_payload", "row_payloads"]

FORMATS = ("json", "jsonl", "csv")
MAX_ROWS = 1000
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


def _json(text: str, where: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:
        # RecursionError: thousands of nested brackets fit in a small file.
        why = exc.msg if isinstance(exc, json.JSONDecodeError) else "nested too deep"
        raise LlamaBenchError({"file": [f"Not llama-bench output: malformed JSON ({where}: {why})."]}) from None


def _read_rows(text: str, fmt: str) -> list[Any]:
    if fmt == "json":
        document = _json(text, "the document")
        if not isinstance(document, list):
            raise LlamaBenchError({"file": ["Not llama-bench output: a JSON list of test objects is expected."]})
        return document
    if fmt == "jsonl":
        return [_json(line, f"line {number}") for number, line in enumerate(text.splitlines(), 1) if line.strip()]
    # newline="": the csv module reads \r\n, \n and a bare \r (old Mac files) as line ends itself.
    reader = csv.DictReader(io.StringIO(text, newline=""), restkey=_EXTRA_CELLS)
    rows: list[Any] = []
    try:
        if not reader.fieldnames or "build_commit" not in reader.fieldnames:
            raise LlamaBenchError({"file": ["Not llama-bench output: the CSV header lacks build_commit."]})
        for row in reader:
            if _EXTRA_CELLS in row:
                raise LlamaBenchError(
                    {f"rows.{len(rows)}": [f"Line {reader.line_num}: more cells than the header has columns."]}
                )
            rows.append(dict(row))
    except csv.Error as exc:
        why = f"line {reader.line_num + 1}: {exc}"  # line_num counts the lines read before the bad one
        raise LlamaBenchError({"file": [f"Not llama-bench output: malformed CSV ({why})."]}) from None
    return rows


_EXTRA_CELLS = "\x00extra cells"  # no CSV header can name a column with a NUL


def _csv_value(name: str, value: Any) -> Any:
    """Return a CSV cell as the JSON output would have it (CSV has only text); a cell
    that does not read as its column's type is left as text, for the row's check to name."""
    if not isinstance(value, str):
        return value
    if name in ("samples_ts", "samples_ns"):
        try:
            return [float(v) for v in value.replace(";", " ").replace(",", " ").split()] if value.strip() else []
        except ValueError:
            return value
    digits = value.removeprefix("-")
    if digits.isascii() and digits.isdigit() and name not in TEXT_FIELDS:  # "²".isdigit() is True too
        return int(value)
    if name in ("avg_ts", "stddev_ts"):
        try:
            return float(value)
        except ValueError:
            return value
    return value


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


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
    return checked_rows(rows, mean_only=mean_only)


def _flash_attn(value: Any) -> str:
    # Older llama-bench prints a boolean, newer -1 (auto) / 0 / 1 (True == 1, False == 0).
    return {1: "on", 0: "off", -1: "auto"}.get(value, str(value) if value is not None else "")


def model_type_parts(model_type: str) -> tuple[str, str]:
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
    arch, quantization = model_type_parts(raw["model_type"])
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

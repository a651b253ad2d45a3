"""llama-bench import: a whole file becomes measured runs, all of them or none.

The parsing (llama-bench's formats → run payloads) is runners.llamabench, shared
with the rig side; this module validates each payload with the run payload's one
definition (runners/delivery/schema.py), as ``POST /api/runs/`` does, and stores the runs in one transaction.

A Markdown table (``-o md``) has no samples: its rows are stored with the mean ± SD
llama-bench printed (``summary_source='printed'``, n = 0 samples; the ``-r`` the
submitter states, if any, as the workload's repetitions), never as a computed summary."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import transaction

from leaderboard.results.api.payloads import payload_checked
from leaderboard.results.models import Rig, Run
from leaderboard.results.services.runs import run_create_measured
from runners import llamabench
from runners.delivery import schema
from runners.llamabench import LlamaBenchError, markdown


@dataclass(frozen=True)
class LlamaBenchImport:
    """The runs of one file in file order; ``created`` counts the new ones (a
    re-imported row finds its run by uuid and stores nothing)."""

    runs: tuple[Run, ...]
    created: int
    format: str


def max_rows() -> int:
    return int(settings.RIGBOARD_LLAMA_BENCH_MAX_ROWS)


# Every format a llama-bench file is taken in: the readers' and the Markdown table.
FORMATS = (*llamabench.FORMATS, markdown.FORMAT)


def repetitions_read(value: str | None) -> int | None:
    """Return a stated -r (a whole number 1–1000) from a form or query value; None when blank.
    Raise LlamaBenchError naming 'repetitions' otherwise."""
    if value in (None, ""):
        return None
    text = str(value).strip()
    if not text.isdigit() or not 1 <= int(text) <= 1000:
        raise LlamaBenchError({"repetitions": [f"{value!r}: a whole number from 1 to 1000 is expected."]})
    return int(text)


def detected_format(text: str, fmt: str | None = None) -> str:
    """Return ``fmt``, else 'md' for a llama-bench Markdown table, else the detected file format."""
    if fmt:
        if fmt not in FORMATS:
            raise LlamaBenchError({"file_format": [f"{fmt!r} is not one of: {', '.join(FORMATS)}."]})
        return fmt
    if markdown.looks_like_markdown(text):
        return markdown.FORMAT
    return llamabench.detect_format(text)


def llama_bench_validated(
    *, text: str, rig_name: str, fmt: str | None = None, notes: str = "", repetitions: int | None = None
) -> list[dict[str, Any]]:
    """Return the validated run data of every row of llama-bench output ``text``.

    Raise LlamaBenchError naming each bad row and field (``rows.3.avg_ts``,
    ``rows.0.model_file.name``; ``line.7.t/s`` in a Markdown table); nothing is
    stored either way. ``repetitions`` (a Markdown table's -r) is ignored for the
    other formats, which carry their own samples."""
    fmt = detected_format(text, fmt)
    if fmt == markdown.FORMAT:
        table_rows = markdown.parse_markdown(text, max_rows=max_rows(), repetitions=repetitions)
        keyed = [
            (f"line.{row.line}", payload)
            for row, payload in zip(
                table_rows,
                markdown.summary_payloads(table_rows, rig=rig_name, notes=notes, repetitions=repetitions),
                strict=True,
            )
        ]
    else:
        rows = llamabench.parse(text, fmt=fmt, max_rows=max_rows())
        payloads = llamabench.row_payloads(rows, rig=rig_name, notes=notes)
        keyed = [(f"rows.{row.position}", payload) for row, payload in zip(rows, payloads, strict=True)]
    errors: dict[str, list[str]] = {}
    validated = []
    for where, payload in keyed:
        # The run payload's one definition, as POST /api/runs/ checks it. A printed summary is
        # the one finished run without samples: it is checked as an open run (which may have
        # none), every other rule alike, and stored finished.
        summary_only = fmt == markdown.FORMAT
        data, row_errors = payload_checked(
            schema.RunCreateInput, {**payload, "status": "running"} if summary_only else payload
        )
        if data is not None:
            validated.append({**data, "status": payload["status"]} if summary_only else data)
        for path, messages in row_errors.items():
            errors[f"{where}.{path}"] = messages
    if errors:
        raise LlamaBenchError(errors)
    return validated


def printed_figures(data: Mapping[str, Any]) -> dict[str, float | None]:
    """Return the summary fields of one Markdown-table row: the printed mean ± SD as
    decode for a tg test, the mean as prefill for a pp test."""
    summary = markdown.printed_summary(data.get("extra") or {}) or {}
    if data["workload"].get("max_tokens"):  # a tg test
        return {
            "decode_tokens_per_s_mean": summary.get("mean_ts"),
            "decode_tokens_per_s_stdev": summary.get("stddev_ts"),
        }
    return {"prefill_tokens_per_s_mean": summary.get("mean_ts")}


def llama_bench_import(
    *, rig: Rig, text: str, fmt: str | None = None, notes: str = "", repetitions: int | None = None
) -> LlamaBenchImport:
    """Store every test row of llama-bench output ``text`` as a run of ``rig``: measured
    with its samples, or (a Markdown table) with the summary llama-bench printed.

    All or nothing: raise LlamaBenchError (nothing stored) when any row is bad;
    an ApplicationError from ingest (a row's uuid taken by another rig) rolls
    the whole file back too."""
    fmt = detected_format(text, fmt)
    validated = llama_bench_validated(text=text, rig_name=rig.name, fmt=fmt, notes=notes, repetitions=repetitions)
    runs, created = [], 0
    with transaction.atomic():
        for data in validated:
            figures = printed_figures(data) if fmt == markdown.FORMAT else None
            result = run_create_measured(rig=rig, data=data, printed=figures)
            runs.append(result.run)
            created += result.created
    return LlamaBenchImport(runs=tuple(runs), created=created, format=fmt)

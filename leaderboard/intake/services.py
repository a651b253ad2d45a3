"""llama-bench import: a whole file becomes measured runs, all of them or none.

The parsing (llama-bench's formats → run payloads) is runners.llamabench, shared
with the rig side; this module validates each payload with the run payload's one
definition (runners/delivery/schema.py), as ``POST /api/runs/`` does, and stores the runs in one transaction."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import transaction

from leaderboard.results.api.payloads import payload_checked
from leaderboard.results.models import Rig, Run
from leaderboard.results.services.runs import run_create_measured
from runners import llamabench
from runners.delivery import schema
from runners.llamabench import LlamaBenchError


@dataclass(frozen=True)
class LlamaBenchImport:
    """The runs of one file in file order; ``created`` counts the new ones (a
    re-imported row finds its run by uuid and stores nothing)."""

    runs: tuple[Run, ...]
    created: int
    format: str


def max_rows() -> int:
    return int(settings.RIGBOARD_LLAMA_BENCH_MAX_ROWS)


def llama_bench_validated(*, text: str, rig_name: str, fmt: str | None = None, notes: str = "") -> list[dict[str, Any]]:
    """Return the validated run data of every row of llama-bench output ``text``.

    Raise LlamaBenchError naming each bad row and field (``rows.3.avg_ts``,
    ``rows.0.model_file.name``); nothing is stored either way."""
    fmt = fmt or llamabench.detect_format(text)
    rows = llamabench.parse(text, fmt=fmt, max_rows=max_rows())
    errors: dict[str, list[str]] = {}
    validated = []
    for row, payload in zip(rows, llamabench.row_payloads(rows, rig=rig_name, notes=notes), strict=True):
        # The run payload's one definition, as POST /api/runs/ checks it.
        data, row_errors = payload_checked(schema.RunCreateInput, payload)
        if data is not None:
            validated.append(data)
        for path, messages in row_errors.items():
            errors[f"rows.{row.position}.{path}"] = messages
    if errors:
        raise LlamaBenchError(errors)
    return validated


def llama_bench_import(*, rig: Rig, text: str, fmt: str | None = None, notes: str = "") -> LlamaBenchImport:
    """Store every test row of llama-bench output ``text`` as a measured run of ``rig``.

    All or nothing: raise LlamaBenchError (nothing stored) when any row is bad;
    an ApplicationError from ingest (a row's uuid taken by another rig) rolls
    the whole file back too."""
    fmt = fmt or llamabench.detect_format(text)
    validated = llama_bench_validated(text=text, rig_name=rig.name, fmt=fmt, notes=notes)
    runs, created = [], 0
    with transaction.atomic():
        for data in validated:
            result = run_create_measured(rig=rig, data=data)
            runs.append(result.run)
            created += result.created
    return LlamaBenchImport(runs=tuple(runs), created=created, format=fmt)

"""llama-bench's Markdown table (``-o md``, its default output) → the rows the other readers give.

The table is what people paste into issues, discussions and READMEs::

    | model                  |       size |  params | backend    | threads |  test |             t/s |
    | ---------------------- | ---------: | ------: | ---------- | ------: | ----: | --------------: |
    | llama 1B Q4_K - Medium | 636.18 MiB |  1.10 B | Metal,BLAS |      16 | pp512 | 5587.84 ± 12.06 |

    build: e9fd8dc (7825)

Each table row becomes a :class:`~runners.llamabench.parse.BenchRow` with the raw
columns named as ``-o json`` names them (``ngl`` → ``n_gpu_layers``, ``fa`` →
``flash_attn``…), so the configuration, workload and model file are mapped by the
same code as a JSON row. What the table lacks is said, never guessed:

- no per-repetition samples: llama-bench prints the mean ± the sample SD only. A row is
  a *printed summary* (``summary_only``), its n the ``-r`` the submitter states, else
  "not stated"; :func:`summary_payload` sends no samples and carries the figures in
  ``extra.llama_bench.summary``, which the service stores as such.
- sizes and parameter counts are rounded as printed (``636.18 MiB``): kept as printed
  beside the bytes they stand for.
- no model file name: the model type (``llama 1B Q4_K - Medium``) names the model.
- the ``build:`` line after a table dates that table (and any before it that have none);
  without one the build is "not stated".

Several tables in one paste are read in order; text around them (the command line,
``ggml_cuda_init`` lines, code fences, prose) is skipped. A Markdown table that is
not llama-bench's (no ``test`` and ``t/s`` columns) is skipped too. Errors name the
line (1-based) and the column: ``line.7.t/s``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from runners.llamabench.parse import MAX_ROWS, BenchRow, LlamaBenchError, row_payload
from runners.llamabench.row import checked_rows

FORMAT = "md"
NOT_STATED = "not stated"
# llama-bench's display names (llama-bench.cpp, markdown_printer) → the -o json field.
COLUMNS = {
    "model": "model_type",
    "size": "model_size",
    "params": "model_n_params",
    "backend": "backends",
    "threads": "n_threads",
    "ngl": "n_gpu_layers",
    "sm": "split_mode",
    "mg": "main_gpu",
    "nkvo": "no_kv_offload",
    "fa": "flash_attn",
    "mmap": "use_mmap",
    "embd": "embeddings",
    "ts": "tensor_split",
    "ot": "tensor_buft_overrides",
    "dev": "devices",
    "nopo": "no_op_offload",
    "dio": "use_direct_io",
}
REQUIRED_COLUMNS = ("model", "test", "t/s")
_SEPARATOR_CELL = re.compile(r"^:?-{1,}:?$")
# pp512, tg128, tg128 @ d4096, and the combined pp4096+tg128 (-pg), which row.py refuses.
_TEST = re.compile(r"^(pp|tg)\s*(\d+)(?:\s*\+\s*(pp|tg)\s*(\d+))?(?:\s*@\s*d\s*(\d+))?$")
_TS = re.compile(r"^([0-9]+(?:\.[0-9]+)?)(?:\s*(?:±|\+/-|\+-)\s*([0-9]+(?:\.[0-9]+)?))?$")
_SIZE = re.compile(r"^([0-9]+(?:\.[0-9]+)?)\s*(B|KiB|MiB|GiB|TiB)$")
_PARAMS = re.compile(r"^([0-9]+(?:\.[0-9]+)?)\s*([KMBT])$")
_BUILD = re.compile(r"^build:\s*([0-9a-fA-F]{6,40})\s*\((\d+)\)\s*$")
_UNITS = {"B": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40}
_COUNTS = {"K": 1e3, "M": 1e6, "B": 1e9, "T": 1e12}
_INT = re.compile(r"^-?\d+$")


@dataclass(frozen=True)
class TableRow:
    """One row of a llama-bench Markdown table, as a BenchRow with no samples."""

    line: int
    bench: BenchRow
    mean_ts: float
    stddev_ts: float | None
    build_stated: bool
    # The size and parameter count as printed ('636.18 MiB'), rounded by llama-bench.
    printed: Mapping[str, str]


def looks_like_markdown(text: str) -> bool:
    """Return True when ``text`` holds a table header with llama-bench's test and t/s columns."""
    return any(_is_header(_cells(line)) for line in text.splitlines() if line.lstrip().startswith("|"))


def _cells(line: str) -> list[str]:
    body = line.strip()
    if body.startswith("|"):
        body = body[1:]
    if body.endswith("|"):
        body = body[:-1]
    return [cell.strip() for cell in body.split("|")]


def _is_header(cells: Sequence[str]) -> bool:
    names = {c.lower() for c in cells}
    return "test" in names and "t/s" in names


def _is_separator(cells: Sequence[str]) -> bool:
    return bool(cells) and all(_SEPARATOR_CELL.match(c.replace(" ", "")) for c in cells)


@dataclass
class _Table:
    header_line: int
    columns: list[str]
    rows: list[tuple[int, list[str]]]
    build: tuple[str, int] | None = None


def _tables(lines: Sequence[str], errors: dict[str, list[str]]) -> list[_Table]:
    tables: list[_Table] = []
    current: _Table | None = None
    # A build line printed before any table (llama-bench's log, pasted above it) dates the next one.
    pending: tuple[str, int] | None = None
    for number, raw in enumerate(lines, start=1):
        line = raw.strip()
        build = _BUILD.match(line.strip("`").strip())
        if build:
            found = (build.group(1), int(build.group(2)))
            # The build line follows its table; it dates every earlier table still without one.
            undated = [t for t in reversed(tables) if t.build is None]
            for table in undated:
                table.build = found
            pending = None if undated else found
            current = None
            continue
        if not line.startswith("|"):
            current = None
            continue
        cells = _cells(line)
        if current is None:
            if _is_header(cells):
                current = _Table(number, [c.lower() for c in cells], [], pending)
                pending = None
                tables.append(current)
            elif not _is_separator(cells) and ("test" in {c.lower() for c in cells} or "t/s" in cells):
                errors[f"line.{number}"] = ["A llama-bench table header needs both a 'test' and a 't/s' column."]
            continue
        if _is_separator(cells):
            if current.rows:
                errors[f"line.{number}"] = ["A separator row inside the table."]
            continue
        if len(cells) != len(current.columns):
            errors[f"line.{number}"] = [
                f"{len(cells)} cells, but the header on line {current.header_line} has {len(current.columns)}."
            ]
            continue
        current.rows.append((number, cells))
    return tables


# A schema field (runners/llamabench/row.py) → the column it is printed under, to name the cell.
_FIELD_COLUMNS = {
    **{field: column for column, field in COLUMNS.items()},
    "model_filename": "model",
    "n_prompt": "test",
    "n_gen": "test",
    "n_depth": "test",
    "avg_ts": "t/s",
    "stddev_ts": "t/s",
    "samples_ts": "t/s",
    "build_commit": "build",
    "build_number": "build",
}


def _row_raw(table: _Table, number: int, cells: Sequence[str], errors: dict[str, list[str]]) -> dict[str, Any] | None:
    """Return one row's cells as llama-bench's -o json columns, read from their printed text.

    Only the printed forms are read here (a test name, 'mean ± sd', '636.18 MiB'); what
    makes a row valid is row.py's one definition (:func:`_schema_checked`)."""
    raw: dict[str, Any] = {}
    before = len(errors)
    for name, cell in zip(table.columns, cells, strict=True):
        where = f"line.{number}.{name}"
        if name == "test":
            test = _TEST.match(cell)
            if not test:
                errors[where] = [f"{cell!r} is not a llama-bench test (pp512, tg128, tg128 @ d4096)."]
                continue
            counts = {"pp": 0, "tg": 0}
            for kind, count in ((test.group(1), test.group(2)), (test.group(3), test.group(4))):
                if kind:
                    counts[kind] += int(count)
            raw["n_prompt"], raw["n_gen"], raw["n_depth"] = counts["pp"], counts["tg"], int(test.group(5) or 0)
        elif name == "t/s":
            figure = _TS.match(cell)
            if not figure:
                errors[where] = [f"{cell!r} is not 'mean ± sd' in t/s."]
                continue
            raw["avg_ts"] = float(figure.group(1))
            raw["stddev_ts"] = float(figure.group(2)) if figure.group(2) else None
        elif name == "size":
            size = _SIZE.match(cell)
            if not size:
                errors[where] = [f"{cell!r} is not a size such as '636.18 MiB'."]
                continue
            raw["model_size"] = round(float(size.group(1)) * _UNITS[size.group(2)])
            raw["model_size_printed"] = cell
        elif name == "params":
            params = _PARAMS.match(cell)
            if not params:
                errors[where] = [f"{cell!r} is not a parameter count such as '1.10 B'."]
                continue
            raw["model_n_params"] = round(float(params.group(1)) * _COUNTS[params.group(2)])
            raw["model_n_params_printed"] = cell
        else:
            key = COLUMNS.get(name, name)
            raw[key] = int(cell) if _INT.match(cell) and key not in ("backends", "devices") else cell
    if len(errors) > before:
        return None
    return raw


def _schema_checked(raws: Sequence[tuple[int, dict[str, Any]]]) -> list[BenchRow]:
    """Return the rows checked by row.py's one definition of a llama-bench row (as the
    JSON, JSONL and CSV readers' rows are); raise LlamaBenchError naming each bad line
    and the column printed there (``rows.3.n_gen`` → ``line.13.test``)."""
    try:
        # The schema checks a mean-only row as one sample, avg_ts; a printed row keeps none.
        checked = checked_rows([{**raw, "samples_ts": [raw.get("avg_ts")]} for _, raw in raws], mean_only=True)
        return [replace(bench, samples_ts=()) for bench in checked]
    except LlamaBenchError as exc:
        errors: dict[str, list[str]] = {}
        for where, reasons in exc.errors.items():
            parts = where.split(".")
            line = raws[int(parts[1])][0] if len(parts) > 1 and parts[1].isdigit() else None
            if parts[0] != "rows" or line is None:
                errors[where] = reasons
                continue
            field_name = parts[2] if len(parts) > 2 else ""
            column = _FIELD_COLUMNS.get(field_name, field_name)
            errors[f"line.{line}.{column}" if column else f"line.{line}"] = reasons
        raise LlamaBenchError(errors) from None


def parse_markdown(
    text: str, *, max_rows: int = MAX_ROWS, repetitions: int | None = None, skip_combined: bool = False
) -> list[TableRow]:
    """Return every row of every llama-bench Markdown table in ``text``, in order.

    ``repetitions`` is the ``-r`` the tables were run with, when the submitter states
    it (the table does not print it). Raise LlamaBenchError naming each bad line and
    column (``line.7.t/s``): a row with the wrong number of cells, a test or t/s that
    is not llama-bench's, a row row.py's definition refuses (a combined -pg test, HTML,
    a figure out of bounds), no table at all, over ``max_rows`` rows. ``skip_combined``:
    leave a combined -pg row out instead (a table published as it stands, imported
    without the one figure that mixes prefill and decode)."""
    errors: dict[str, list[str]] = {}
    tables = _tables(text.splitlines(), errors)
    if not tables and not errors:
        raise LlamaBenchError(
            {"file": ["No llama-bench Markdown table: expected a header with 'test' and 't/s' columns."]}
        )
    for table in tables:
        missing = [c for c in REQUIRED_COLUMNS if c not in table.columns]
        if missing:
            errors[f"line.{table.header_line}"] = [f"The table lacks the column(s): {', '.join(missing)}."]
        elif not table.rows:
            errors[f"line.{table.header_line}"] = ["The table has no rows."]
    total = sum(len(t.rows) for t in tables)
    if total > max_rows:
        raise LlamaBenchError({"file": [f"{total} rows; at most {max_rows} per paste."]})
    if errors:
        raise LlamaBenchError(errors)
    if repetitions is not None and repetitions < 1:
        raise LlamaBenchError({"repetitions": ["A whole number ≥ 1 is expected."]})
    read: list[tuple[int, dict[str, Any], _Table, dict[str, str]]] = []
    for table in tables:
        commit, number = table.build or (NOT_STATED, 0)
        for line, cells in table.rows:
            raw = _row_raw(table, line, cells, errors)
            if raw is None:
                continue
            printed = {k: raw.pop(k) for k in ("model_size_printed", "model_n_params_printed") if k in raw}
            raw.update(build_commit=commit, build_number=number, model_filename=raw.get("model_type"))
            raw.setdefault("model_size", 0)
            raw.setdefault("model_n_params", 0)
            if skip_combined and raw.get("n_prompt") and raw.get("n_gen"):
                continue
            read.append((line, raw, table, printed))
    if errors:
        raise LlamaBenchError(errors)
    benches = _schema_checked([(line, raw) for line, raw, _, _ in read])
    return [
        TableRow(line, bench, bench.raw["avg_ts"], bench.raw.get("stddev_ts"), table.build is not None, printed)
        for (line, _, table, printed), bench in zip(read, benches, strict=True)
    ]


def summary_payload(row: TableRow, *, rig: str, notes: str = "", repetitions: int | None = None) -> dict[str, Any]:
    """Return the ``POST /api/runs/`` payload of one table row: no samples; the printed
    mean and SD in ``extra.llama_bench.summary`` with n as stated (None: not stated)."""
    payload = row_payload(row.bench, rig=rig, notes=notes)
    raw = row.bench.raw
    payload["samples"] = []
    payload["workload"]["repetitions"] = repetitions
    if not row.build_stated:
        payload["stack"]["build"] = ""
        payload["fingerprint"]["build"] = NOT_STATED
    payload["model_file"]["file_size_bytes"] = raw["model_size"] or None
    payload["model_file"]["total_params_b"] = round(raw["model_n_params"] / 1e9, 3) or None
    bench = payload["extra"]["llama_bench"]
    bench.update(
        format=FORMAT,
        line=row.line,
        mean_only=True,
        model_size_printed=row.printed.get("model_size_printed", ""),
        model_n_params_printed=row.printed.get("model_n_params_printed", ""),
        summary={
            "mean_ts": row.mean_ts,
            "stddev_ts": row.stddev_ts,
            "n": repetitions,
            "n_label": str(repetitions) if repetitions else NOT_STATED,
            "source": "llama-bench -o md: mean ± SD as printed, no samples",
        },
    )
    return payload


def summary_payloads(
    rows: Sequence[TableRow], *, rig: str, notes: str = "", repetitions: int | None = None
) -> list[dict[str, Any]]:
    """Return one run payload per table row, in paste order."""
    return [summary_payload(row, rig=rig, notes=notes, repetitions=repetitions) for row in rows]


def printed_summary(extra: Mapping[str, Any]) -> dict[str, Any] | None:
    """Return a run's printed llama-bench summary from its ``extra`` (None for other runs)."""
    bench = extra.get("llama_bench") if isinstance(extra, Mapping) else None
    summary = bench.get("summary") if isinstance(bench, Mapping) else None
    return dict(summary) if isinstance(summary, Mapping) else None

"""One llama-bench test row: its one definition, whatever file it was read from.

Every reader (``-o json``, ``-o jsonl``, ``-o csv`` in parse.py, and any other
output format) turns its file into plain dicts of llama-bench's column names and
hands them to :func:`checked_rows`, the entry point: it checks each row against
``LlamaBenchRow`` and the rules between columns, and returns the rows or raises
LlamaBenchError naming each bad row and field (``rows.3.samples_ts``). So a
malformed file is a 400 naming what is wrong, never an exception deeper in.

Bounds are those of the run payload the rows become (runners/delivery/schema.py):
a t/s beyond the prefill bound, a depth beyond the largest context, a count of
bytes beyond a petabyte is a broken or forged file. Columns this model does not
name are llama-bench's other flags (``use_mmap``, ``n_cpu_moe``…): they are kept,
as scalars of bounded size, and become the configuration's ``extra_args``."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError
from pydantic_core import PydanticCustomError

from runners.delivery.schema import MAX_PREFILL_TOKENS_PER_S, MAX_TOKENS
from runners.delivery.schema_types import Number, Text, Whole, check_text, fail, field_errors, json_type

# llama-bench prints avg_ts as the mean of samples_ts rounded to 6 digits; a
# row whose samples are off their own mean by more than this was edited.
SAMPLES_MEAN_TOLERANCE = 0.01
MAX_TEXT_CHARS = 500
MAX_COLUMNS = 100  # llama-bench prints ~40
MAX_COLUMN_NAME_CHARS = 64
MAX_REPETITIONS = 10_000
MAX_BYTES = 10**15  # a model of a petabyte
MAX_PARAMS = 10**15
MAX_NS = 10**15  # a repetition of 11 days
MAX_BUILD_NUMBER = 10**9
_HTML_CHARS = frozenset("<>")
WORKLOAD_PREFIX = "llama-bench "


class LlamaBenchError(ValueError):
    """The file cannot be imported; ``errors`` maps ``rows.N.field`` (or ``file``) to reasons."""

    def __init__(self, errors: Mapping[str, list[str]]) -> None:
        self.errors = dict(errors)
        first = next(iter(self.errors.items()))
        super().__init__(
            f"{first[0]}: {first[1][0]}" + (f" (and {len(self.errors) - 1} more)" if len(errors) > 1 else "")
        )


def _bench_text(value: Any) -> Any:
    check_text(value)
    if _HTML_CHARS & set(value):
        raise fail("HTML is not allowed here ('<' or '>').")
    return value


def _flash_attn(value: Any) -> Any:
    # Older llama-bench prints a boolean, newer -1 (auto) / 0 / 1, some builds "auto"/"on"/"off".
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int) and -1 <= value <= 1:
        return value
    if isinstance(value, str) and len(value) <= 16:
        return check_text(value)
    raise fail(f"true, false, -1, 0, 1 or a short word is required, not {json_type(value)} {value!r:.40}.")


def _samples(value: Any) -> Any:
    if not isinstance(value, list):
        raise fail(f"A list of numbers is required, not {json_type(value)}.")
    return value


BenchText = Annotated[Text, BeforeValidator(_bench_text), Field(max_length=MAX_TEXT_CHARS)]
Count = Annotated[Whole, Field(ge=0, le=MAX_TOKENS)]
TokensPerS = Annotated[Number, Field(gt=0, le=MAX_PREFILL_TOKENS_PER_S)]
Nanoseconds = Annotated[Whole, Field(gt=0, le=MAX_NS)]


class LlamaBenchRow(BaseModel):
    """The columns of one llama-bench test that Rigboard reads (``-o json`` names and types)."""

    model_config = ConfigDict(extra="allow", defer_build=True)

    build_commit: BenchText
    build_number: Annotated[Whole, Field(ge=0, le=MAX_BUILD_NUMBER)]
    model_filename: BenchText
    model_type: BenchText
    model_size: Annotated[Whole, Field(ge=0, le=MAX_BYTES)]
    model_n_params: Annotated[Whole, Field(ge=0, le=MAX_PARAMS)]
    n_prompt: Count
    n_gen: Count
    n_depth: Count | None = None
    avg_ts: Annotated[Number, Field(gt=0, le=MAX_PREFILL_TOKENS_PER_S)]
    stddev_ts: Annotated[Number, Field(ge=0, le=MAX_PREFILL_TOKENS_PER_S)] | None = None
    samples_ts: Annotated[list[TokensPerS], BeforeValidator(_samples), Field(min_length=1, max_length=MAX_REPETITIONS)]
    samples_ns: Annotated[list[Nanoseconds], BeforeValidator(_samples), Field(max_length=MAX_REPETITIONS)] | None = None
    avg_ns: Annotated[Number, Field(ge=0, le=MAX_NS)] | None = None
    stddev_ns: Annotated[Number, Field(ge=0, le=MAX_NS)] | None = None
    cpu_info: BenchText | None = None
    gpu_info: BenchText | None = None
    backends: BenchText | None = None
    test_time: BenchText | None = None
    flash_attn: Annotated[bool | int | str | None, BeforeValidator(_flash_attn)] = None
    n_gpu_layers: Annotated[Whole, Field(ge=-1, le=100_000)] | None = None
    n_threads: Annotated[Whole, Field(ge=0, le=100_000)] | None = None
    n_batch: Count | None = None
    n_ubatch: Count | None = None
    type_k: Annotated[Text, Field(max_length=32)] | None = None
    type_v: Annotated[Text, Field(max_length=32)] | None = None
    tensor_split: Annotated[Text, Field(max_length=200)] | None = None
    tensor_buft_overrides: Annotated[Text, Field(max_length=2000)] | None = None


def _other_columns(row: Mapping[str, Any], where: str, errors: dict[str, list[str]]) -> None:
    """Check the columns the model does not name: a bounded number of them, each a scalar."""
    if len(row) > MAX_COLUMNS:
        errors[where] = [f"{len(row)} columns; at most {MAX_COLUMNS}."]
        return
    for name, value in row.items():
        if name in LlamaBenchRow.model_fields:
            continue
        if not isinstance(name, str) or not name or len(name) > MAX_COLUMN_NAME_CHARS:
            errors[where] = [f"A column name of 1 to {MAX_COLUMN_NAME_CHARS} characters is required: {name!r:.80}."]
            continue
        path = f"{where}.{name}"
        try:
            check_text(name)
            if isinstance(value, str):
                check_text(value)
                if len(value) > MAX_TEXT_CHARS:
                    raise fail(f"Text over {MAX_TEXT_CHARS} characters.")
            elif isinstance(value, float) and not math.isfinite(value):
                raise fail("A finite number is required.")
            elif value is not None and not isinstance(value, bool | int | float):
                raise fail(f"A number, text, true/false or null is required, not {json_type(value)}.")
            elif isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_BYTES:
                raise fail(f"Ensure this value is between -{MAX_BYTES} and {MAX_BYTES}.")
        except PydanticCustomError as exc:
            errors[path] = [exc.message()]


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


def check_row(position: int, row: Any, errors: dict[str, list[str]], *, mean_only: bool = False) -> BenchRow | None:
    """Return the row at ``position`` checked, or None with its problems added to ``errors``."""
    where = f"rows.{position}"
    if not isinstance(row, dict):
        errors[where] = ["A test row must be an object."]
        return None
    before = len(errors)
    _other_columns(row, where, errors)
    try:
        checked = LlamaBenchRow.model_validate(row)
    except ValidationError as exc:
        for path, reasons in field_errors(exc).items():
            errors[f"{where}.{path}" if path != "body" else where] = reasons
        return None
    if len(errors) > before:
        return None
    samples, samples_ns = checked.samples_ts, checked.samples_ns or []
    if samples_ns and len(samples_ns) != len(samples):
        errors[f"{where}.samples_ns"] = [f"{len(samples_ns)} samples, but samples_ts has {len(samples)}."]
        return None
    mean = math.fsum(samples) / len(samples)
    if abs(mean - checked.avg_ts) > SAMPLES_MEAN_TOLERANCE * max(abs(checked.avg_ts), 1e-9):
        errors[f"{where}.avg_ts"] = [f"avg_ts {checked.avg_ts} disagrees with the mean of samples_ts ({mean:.6g})."]
        return None
    if mean_only:
        row = {k: v for k, v in row.items() if k != "samples_ts"}
    bench = BenchRow(position, row, tuple(samples), tuple(samples_ns), mean_only)
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


def checked_rows(rows: Sequence[Any], *, mean_only: bool = False) -> list[BenchRow]:
    """Return every row of a file checked (the entry point for any reader: rows as dicts
    of llama-bench's column names, in file order); raise LlamaBenchError naming each bad
    row and field. ``mean_only``: the rows' samples_ts is their avg_ts alone (no raw samples)."""
    errors: dict[str, list[str]] = {}
    checked = [check_row(position, row, errors, mean_only=mean_only) for position, row in enumerate(rows)]
    if errors:
        raise LlamaBenchError(errors)
    return [row for row in checked if row is not None]

"""llama-bench on Rigboard: its output files as measured runs (parse), and the runner
running llama-bench itself (bench); ``python -m runners.llamabench`` is the CLI."""

from runners.llamabench.parse import (
    FORMATS,
    MAX_ROWS,
    WORKLOAD_PREFIX,
    BenchRow,
    LlamaBenchError,
    detect_format,
    parse,
    row_payload,
    row_payloads,
)

__all__ = [
    "FORMATS",
    "MAX_ROWS",
    "WORKLOAD_PREFIX",
    "BenchRow",
    "LlamaBenchError",
    "detect_format",
    "parse",
    "row_payload",
    "row_payloads",
]

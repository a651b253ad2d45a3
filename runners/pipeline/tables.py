"""The texts a terminal prints of a measured run: the repetitions' table, the
summary line, the context sweep's and the concurrency levels' tables, drawn from
the run document (runners.harness.report draws each)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from runners import stats
from runners.harness import report
from runners.harness.concurrency import concurrency_table
from runners.stats import acceptance_pct, summarize


@dataclass(frozen=True)
class ResultTables:
    """A run's printed texts ('' for a part the run has not) and the two figures its summary names."""

    table: str
    summary_line: str
    sweep_table: str
    concurrency_table: str
    decode_tokens_per_s_mean: float | None
    acceptance_pct: float | None


def result_tables(payload: Mapping[str, Any]) -> ResultTables:
    """Return the texts a terminal prints of the run document ``payload``."""
    samples = payload["samples"]
    tps = [
        stats.decode_tokens_per_s(server=s["decode_tokens_per_s_server"], client=s["decode_tokens_per_s_client"])
        for s in samples
    ]
    summary = summarize([v for v in tps if v is not None])
    rows = [_Row(s, v) for s, v in zip(samples, tps, strict=True)]
    points = [_PointRow(p) for p in payload["sweep_points"]]
    return ResultTables(
        table=report.samples_table(rows),
        summary_line=report.summary_line(rows),
        sweep_table=report.sweep_table(points) if points else "",
        concurrency_table=concurrency_table(payload.get("concurrency_levels") or []),
        decode_tokens_per_s_mean=summary.mean if summary else None,
        acceptance_pct=acceptance_pct([s["draft_n"] for s in samples], [s["draft_n_accepted"] for s in samples]),
    )


class _Row:
    def __init__(self, sample: Mapping[str, Any], tps: float | None) -> None:
        self.index = int(sample["index"])
        self.decode_tokens_per_s = tps
        self.draft_n = sample["draft_n"]
        self.draft_n_accepted = sample["draft_n_accepted"]


class _PointRow:
    def __init__(self, point: Mapping[str, Any]) -> None:
        self.ctx_label = str(point["ctx_label"])
        self.prefill_tokens_per_s = point["prefill_tokens_per_s"]
        self.decode_tokens_per_s = point["decode_tokens_per_s"]
        self.ttft_ms = point["ttft_ms"]
        self.power_w = point["power_w"]
        self.note = str(point["note"])

"""The tables a rig owner reads: per-repetition decode speed and draft acceptance
(the shape published benchmarks use), and the context sweep with deltas.

Pure formatting over runners.stats: the same figures the service computes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from runners.stats import acceptance_pct, relative_delta_pct, summarize


class _Rep(Protocol):
    @property
    def index(self) -> int: ...
    @property
    def decode_tokens_per_s(self) -> float | None: ...
    @property
    def draft_n(self) -> int | None: ...
    @property
    def draft_n_accepted(self) -> int | None: ...


class _Point(Protocol):
    @property
    def ctx_label(self) -> str: ...
    @property
    def prefill_tokens_per_s(self) -> float | None: ...
    @property
    def decode_tokens_per_s(self) -> float | None: ...
    @property
    def ttft_ms(self) -> float | None: ...
    @property
    def power_w(self) -> float | None: ...
    @property
    def note(self) -> str: ...


def _num(value: float | int | None, digits: int = 2) -> str:
    if value is None:
        return "—"
    return str(value) if isinstance(value, int) else f"{value:.{digits}f}"


def samples_table(samples: Sequence[_Rep]) -> str:
    """Return the markdown table: run | t/s | draft_n | accepted | accept %, then an AVG row
    with pooled acceptance and the t/s σ and range. '—' marks a figure the server did not report."""
    lines = ["| run | t/s | draft_n | accepted | accept % |", "|---|---|---|---|---|"]
    for s in samples:
        pct = acceptance_pct([s.draft_n], [s.draft_n_accepted])
        accept = f"{pct:.1f}%" if pct is not None else "—"
        lines.append(
            f"| {s.index} | {_num(s.decode_tokens_per_s)} | {_num(s.draft_n)} | {_num(s.draft_n_accepted)} | {accept} |"
        )
    summary = summarize([s.decode_tokens_per_s for s in samples if s.decode_tokens_per_s is not None])
    if summary is None:
        return "\n".join(lines)
    pooled = acceptance_pct([s.draft_n for s in samples], [s.draft_n_accepted for s in samples])
    spread = f"σ {summary.stdev:.1f}, range {summary.range:.2f}" if summary.stdev is not None else "one run"
    accept_avg = f"{pooled:.1f}% ({spread})" if pooled is not None else f"({spread})"
    lines.append(f"| AVG | {summary.mean:.2f} | | | {accept_avg} |")
    return "\n".join(lines)


def summary_line(samples: Sequence[_Rep]) -> str:
    """Return one line with median and 95% CI of decode t/s; '' without samples."""
    summary = summarize([s.decode_tokens_per_s for s in samples if s.decode_tokens_per_s is not None])
    if summary is None:
        return ""
    line = f"decode t/s: mean {summary.mean:.2f}, median {summary.median:.2f}, n {summary.n}"
    if summary.ci95_low is not None and summary.ci95_high is not None:
        line += f", 95% CI {summary.ci95_low:.2f}–{summary.ci95_high:.2f}"
    return line


def sweep_table(points: Sequence[_Point]) -> str:
    """Return the markdown sweep table with the decode delta against the first measured depth."""
    lines = [
        "| context | prefill t/s | decode t/s | TTFT ms | power W | delta vs first | note |",
        "|---|---|---|---|---|---|---|",
    ]
    base = next((p.decode_tokens_per_s for p in points if p.decode_tokens_per_s is not None), None)
    seen_base = False
    for p in points:
        if p.decode_tokens_per_s is None:
            delta = "—"
        elif not seen_base:
            delta, seen_base = "baseline", True
        else:
            pct = relative_delta_pct(p.decode_tokens_per_s, base)
            delta = f"{pct:+.1f}%" if pct is not None else "—"
        lines.append(
            f"| {p.ctx_label} | {_num(p.prefill_tokens_per_s)} | {_num(p.decode_tokens_per_s)} | "
            f"{_num(p.ttft_ms, 0)} | {_num(p.power_w, 1)} | {delta} | {p.note} |"
        )
    return "\n".join(lines)

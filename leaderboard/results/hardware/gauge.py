"""What the leaderboard's "of bound" cell shows of a run: its share of the bound and the
tooltip saying where the bound comes from (or why there is none).

``gauge_facts`` computes them from a run's bound; ``stored.store_bound_shares`` keeps
them beside the share (``RunBoundShare``), so a page of 50 rows reads them in one query
instead of computing 50 bounds (two queries more and ~7 ms of CPU a page at 100k runs:
issue 40, benchmarks/README.md).
The cell's HTML is written from these facts alone (``boards/bound_text.gauge_cell``),
so the stored and the computed cell cannot differ in form."""

from __future__ import annotations

from dataclasses import dataclass

from leaderboard.results.hardware.runs import RunBound
from runners.bandwidth.bound import GB, Bound


def gb(value: float) -> str:
    """Return bytes as GB with two significant decimals where small: 5.1 GB, 0.25 GB."""
    number = value / GB
    return f"{number:.2f} GB" if number < 1 else f"{number:.1f} GB"


def memories(bound: Bound) -> str:
    """Return '936 GB/s' for one memory, '936 GB/s RTX 3090 + 83 GB/s DDR5-5200 × 2 channels' for a split."""
    parts = [m for m in (bound.gpu, bound.cpu) if m is not None]
    if len(parts) == 1:
        return f"{parts[0].gb_per_s:,.0f} GB/s"
    return " + ".join(f"{m.gb_per_s:,.0f} GB/s {m.label}" for m in parts)


@dataclass(frozen=True)
class GaugeFacts:
    """A run's gauge cell: ``title`` its tooltip; ``bounded`` whether the run has a bound;
    ``decoded`` whether it has a decode figure to hold against it; ``share`` decode ÷
    bound, None where speculative decoding passes the single-token bound."""

    title: str
    bounded: bool
    decoded: bool
    share: float | None


def bound_title(rb: RunBound) -> str:
    """Return the cell's tooltip: 'bound 936.0 t/s: 936 GB/s, 1.0 GB per token', or why there is no bound."""
    if rb.bound is None:
        return rb.reason
    return f"bound {rb.bound.tokens_per_s:,.1f} t/s: {memories(rb.bound)}, {gb(rb.bound.bytes_per_token)} per token"


def gauge_facts(rb: RunBound | None) -> GaugeFacts:
    """Return the gauge cell's facts of a run's bound (None: the run's bound is not known)."""
    if rb is None:
        return GaugeFacts(title="no bound", bounded=False, decoded=False, share=None)
    return GaugeFacts(
        title=bound_title(rb),
        bounded=rb.bound is not None,
        decoded=bool(rb.facts.decode_tokens_per_s),
        share=rb.share,
    )

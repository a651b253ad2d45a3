"""The memory-bandwidth bound as the pages say it (issue 38): the run page's sentence,
the leaderboard's gauge cell, the prefill FLOP/s line and the outlier note. Plain
functions returning escaped HTML, shared by the template tags (templatetags/bounds.py)
and the fenced row cells (speedups/cells.py)."""

from __future__ import annotations

from typing import Any

from django.utils.html import format_html
from django.utils.safestring import SafeString

from leaderboard.results.hardware.estimate import Estimate
from leaderboard.results.hardware.gauge import GaugeFacts, gauge_facts, gb, memories
from leaderboard.results.hardware.runs import RunBound
from runners.bandwidth.bound import Bound


def split_text(bound: Bound) -> str:
    """Return where the bytes are read from when they are split: '3.1 GB on the GPU, 2.0 GB in system memory'."""
    if bound.gpu is None or bound.cpu is None:
        return ""
    return f"{gb(bound.read.gpu_bytes)} from the {bound.gpu.label}, {gb(bound.read.cpu_bytes)} from {bound.cpu.label}"


def bound_sentence(rb: RunBound | None) -> SafeString:
    """Return the run page's sentence on the decode figure against its bound."""
    if rb is None:
        return SafeString("")
    if rb.bound is None:
        return format_html("No memory-bandwidth bound for this run: {}.", rb.reason)
    bound, gauge = rb.bound, rb.gauge
    where = f"{memories(bound)}, {gb(bound.bytes_per_token)} read per token"
    if gauge is None:
        return format_html("This rig's memory-bandwidth bound: {} t/s ({}).", f"{bound.tokens_per_s:,.1f}", where)
    if gauge.over_by_speculation:
        return format_html(
            "Speculative decoding passes the single-token memory-bandwidth bound of {} t/s ({}): "
            "several tokens are verified per read, so at most {} can have been read per accepted token.",
            f"{bound.tokens_per_s:,.1f}",
            where,
            gb(gauge.bytes_per_accepted_token),
        )
    if gauge.impossible:
        return format_html(
            "Decode at {}% of this rig's memory-bandwidth bound ({}): faster than its memory can be read, "
            "so a figure or a hardware fact is wrong.",
            f"{gauge.ratio * 100:.0f}",
            where,
        )
    spec = " (the single-token bound: speculative decoding may pass it)" if gauge.speculative else ""
    return format_html(
        "Decode at {}% of this rig's memory-bandwidth bound ({}){}.", f"{gauge.ratio * 100:.0f}", where, spec
    )


def bound_details(rb: RunBound | None) -> list[str]:
    """Return the lines under the sentence: how the bytes were counted, the split, what was left out, the sources."""
    if rb is None or rb.bound is None:
        return []
    bound = rb.bound
    lines = [f"Bytes per token from {bound.read.basis}; bound {bound.tokens_per_s:,.1f} t/s."]
    if split := split_text(bound):
        lines.append(f"Read per token: {split}; the times add.")
    if bound.read.gpu_kv_bytes + bound.read.cpu_kv_bytes:
        lines.append(f"Of which KV cache: {gb(bound.read.gpu_kv_bytes + bound.read.cpu_kv_bytes)}.")
    lines.extend(f"{note[0].upper()}{note[1:]}." for note in bound.notes)
    lines.extend(f"{m.label}: {m.gb_per_s:,.1f} GB/s ({m.source})" for m in (bound.gpu, bound.cpu) if m is not None)
    return lines


def prefill_sentence(rb: RunBound | None) -> SafeString:
    """Return 'Prefill at 120 TFLOP/s, 38% of the A100 PCIe's 312 TFLOP/s …' where the peak is known."""
    if rb is None or rb.prefill_tflops is None or not rb.peak_tflops:
        return SafeString("")
    return format_html(
        "Prefill at {} TFLOP/s (2 FLOPs per active parameter per prompt token), {}% of the card's {} TFLOP/s "
        "FP16 tensor peak without sparsity.",
        f"{rb.prefill_tflops:,.1f}",
        f"{rb.prefill_tflops / rb.peak_tflops * 100:.0f}",
        f"{rb.peak_tflops:g}",
    )


def gauge_cell(gauge: GaugeFacts | RunBound | None) -> SafeString:
    """Return the leaderboard's "of bound" cell: '72%', 'spec. › bound', '–', from a run's
    stored gauge facts (the board's rows) or its bound (computed: a campaign's trials)."""
    facts = gauge if isinstance(gauge, GaugeFacts) else gauge_facts(gauge)
    if not facts.bounded or not facts.decoded:
        return format_html('<span class="muted" title="{}">–</span>', facts.title)
    if facts.share is None:
        return format_html(
            '<span class="bound-spec" title="speculative decoding passes the single-token {}">spec. › bound</span>',
            facts.title,
        )
    css = "bound-impossible" if facts.share > 1 else "bound-share"
    return format_html('<span class="{}" title="{}">{}%</span>', css, facts.title, f"{facts.share * 100:.0f}")


def outlier_note(rb: RunBound | None, peers: Estimate | None) -> SafeString:
    """Return the note for a run far below its peers' share of the bound: below the
    low end of their 80% interval and under two thirds of their median; '' otherwise."""
    if rb is None or rb.share is None or rb.facts.speculative:
        return SafeString("")
    return share_outlier_note(rb.share, peers)


def share_outlier_note(share: float, peers: Estimate | None) -> SafeString:
    """Return ``outlier_note`` of a plain (not speculative) run's share of its bound."""
    if peers is None or share >= peers.share_low or share >= peers.share_median * 2 / 3:
        return SafeString("")
    return format_html(
        "Rigs like this ({}: {} runs on {} rigs) reach {}–{}% of their bound; this run {}%: "
        "check its offload and threads.",
        peers.pool,
        peers.n,
        peers.rigs,
        f"{peers.share_low * 100:.0f}",
        f"{peers.share_high * 100:.0f}",
        f"{share * 100:.0f}",
    )


# A campaign's best trial against its bound: above this share little is left for a search
# to find, below the other much is (the 95% and 40% as the ends of the range).
HEADROOM_SMALL_SHARE = 0.85
HEADROOM_LARGE_SHARE = 0.6


def headroom_note(rb: RunBound | None, trial_number: Any) -> SafeString:
    """Return what a campaign's best trial leaves to find, read off its bound; '' without one."""
    if rb is None or rb.bound is None or rb.gauge is None:
        return SafeString("")
    gauge, where = rb.gauge, f"{rb.bound.tokens_per_s:,.1f} t/s, {memories(rb.bound)}"
    if gauge.over_by_speculation:
        return format_html(
            "Trial {} passes the single-token memory-bandwidth bound ({}) by speculative decoding.", trial_number, where
        )
    share = f"{gauge.ratio * 100:.0f}%"
    if gauge.ratio >= HEADROOM_SMALL_SHARE:
        verdict = "little is left for a search to find: the memory is close to saturated"
    elif gauge.ratio < HEADROOM_LARGE_SHARE:
        verdict = "much is left: offload, threads, batch or the build hold it back, which a search can find"
    else:
        verdict = "some is left for a search to find"
    return format_html(
        "Trial {} decodes at {} of this rig's memory-bandwidth bound ({}): {}.", trial_number, share, where, verdict
    )

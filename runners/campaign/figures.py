"""A trial's figures from the repetitions of the run behind it, written once: the
rig's CLI reads them from the run document it posted (trial.py), the service from
the stored run's samples (leaderboard.campaigns.dispatch), and the rig's pruning
hook reads one repetition's decode figure (hooks.py).

A repetition is a mapping with the run payload's sample keys (``SAMPLE_FIELDS``);
the decode figure is ``runners.stats.decode_tokens_per_s``: the server's whenever
it reported one, even 0.0, else the client's.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from runners import stats

# What a trial keeps per repetition: every objective (spec.OBJECTIVES) and peak
# VRAM, a Pareto axis. Perplexity is measured once per model file, not per repetition.
PER_REPETITION = ("decode_tokens_per_s", "prefill_tokens_per_s", "ttft_ms", "tokens_per_kwh", "vram_peak_mib")
# The sample keys read here (the run payload's names, and the stored Sample's).
SAMPLE_FIELDS = (
    "index",
    "decode_tokens_per_s_server",
    "decode_tokens_per_s_client",
    "prefill_tokens_per_s",
    "ttft_ms",
    "tokens_generated",
    "energy_j",
    "vram_peak_mib",
    "output_ok",
)


def repetition_decode(sample: Mapping[str, Any]) -> float | None:
    """Return one repetition's decode t/s by the one rule (server's, even 0.0, else client's)."""
    return stats.decode_tokens_per_s(
        server=_float(sample.get("decode_tokens_per_s_server")), client=_float(sample.get("decode_tokens_per_s_client"))
    )


def repetition_figures(sample: Mapping[str, Any]) -> dict[str, float | None]:
    """Return one repetition's value of each ``PER_REPETITION`` metric (None: not measured).
    Its tokens/kWh is its own tokens over its own energy."""
    tokens = sample.get("tokens_generated")
    return {
        "decode_tokens_per_s": repetition_decode(sample),
        "prefill_tokens_per_s": _float(sample.get("prefill_tokens_per_s")),
        "ttft_ms": _float(sample.get("ttft_ms")),
        "tokens_per_kwh": stats.tokens_per_kwh(tokens, _float(sample.get("energy_j"))) if tokens is not None else None,
        "vram_peak_mib": _float(sample.get("vram_peak_mib")),
    }


def repetition_seconds(sample: Mapping[str, Any]) -> float:
    """Return the seconds one repetition's request took: its TTFT plus its tokens at
    its decode rate (the one rule; a rate of 0 or none adds nothing for the tokens)."""
    seconds = (_float(sample.get("ttft_ms")) or 0.0) / 1000.0
    rate, tokens = repetition_decode(sample), sample.get("tokens_generated")
    if rate and tokens:
        seconds += tokens / rate
    return seconds


@dataclass(frozen=True)
class TrialFigures:
    """``metrics``: what a trial stores as its figures (means over the repetitions,
    pooled tokens/kWh, peak VRAM, the output check's pass fraction, n_samples);
    ``repetitions``: each ``PER_REPETITION`` metric's measured values in repetition
    order; ``measured_s``: the seconds the requests themselves took."""

    metrics: dict[str, Any]
    repetitions: dict[str, list[float]]
    measured_s: float


def trial_figures(samples: Sequence[Mapping[str, Any]]) -> TrialFigures:
    """Return the figures of a trial whose run has ``samples`` (payload sample
    mappings, any order: they are read by ``index``; a sample with an ``error`` is
    no measurement).

    The objective of a trial is the mean of its repetitions, except tokens/kWh,
    which pools them (all tokens over all energy, as the run's summary does; None
    unless every repetition has both). Figures not measured are None."""
    ordered = sorted((s for s in samples if not s.get("error")), key=lambda s: int(s.get("index") or 0))
    per = [repetition_figures(s) for s in ordered]
    repetitions = {name: [v for v in (p[name] for p in per) if v is not None] for name in PER_REPETITION}
    energy = [e for s in ordered if (e := _float(s.get("energy_j"))) is not None]
    tokens = [int(t) for s in ordered if (t := s.get("tokens_generated")) is not None]
    pooled: float | None = None
    if ordered and len(energy) == len(tokens) == len(ordered):
        pooled = stats.tokens_per_kwh(sum(tokens), sum(energy))
    checks = [s.get("output_ok") for s in ordered if s.get("output_ok") is not None]
    vram = repetitions["vram_peak_mib"]
    metrics = {
        "decode_tokens_per_s": _mean(repetitions["decode_tokens_per_s"]),
        "prefill_tokens_per_s": _mean(repetitions["prefill_tokens_per_s"]),
        "ttft_ms": _mean(repetitions["ttft_ms"]),
        "tokens_per_kwh": pooled,
        "vram_peak_mib": max(vram) if vram else None,
        "output_ok_fraction": sum(1 for c in checks if c) / len(checks) if checks else None,
        "n_samples": len(ordered),
    }
    return TrialFigures(metrics, repetitions, sum(repetition_seconds(s) for s in ordered))


def _mean(values: list[float]) -> float | None:
    return statistics.fmean(values) if values else None


def _float(value: Any) -> float | None:
    return None if value is None else float(value)

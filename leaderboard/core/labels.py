"""A stored figure's name in the words a visitor reads (pages of every app)."""

from __future__ import annotations

import re

# A stored figure's name as a visitor reads it (a concurrency level's or a latency figure's).
FIELD_LABELS = {
    "acceptance_pct": "accept %",
    "energy_j_per_token": "J/token",
    "decode_tokens_per_s_mean": "decode t/s",
    "decode_tokens_per_s": "decode t/s",
    "prefill_tokens_per_s": "prefill t/s",
    "output_tokens_per_s": "output t/s",
    "ttft_ms": "TTFT ms",
    "itl_ms": "inter-token ms",
    "tokens_per_kwh": "tokens/kWh",
    "vram_peak_mib": "peak VRAM MiB",
    "gain_pct": "gain %",
    "output_ok_fraction": "answers passing the output check",
    "perplexity_margin_pct": "perplexity margin %",
}
_PERCENTILE_FIELD = re.compile(r"^(?P<base>.+)_p(?P<q>\d+)$")


def field_label(name: str) -> str:
    """Return a figure's stored name as words: ``ttft_ms_p90`` → ``TTFT ms p90``."""
    if name in FIELD_LABELS:
        return FIELD_LABELS[name]
    match = _PERCENTILE_FIELD.match(name)
    if match and match["base"] in FIELD_LABELS:
        return f"{FIELD_LABELS[match['base']]} p{match['q']}"
    return name.replace("_", " ")


def signed_pct(value: float, digits: int = 1) -> str:
    """Return ``value`` as a signed percentage (``+1.3%``, ``-2,140.0%``) at ``digits``; a value
    that rounds to zero unsigned (``0.0%``): -0.04 is no change at this precision, not "-0.0%"."""
    number = round(float(value), digits)
    if number == 0:
        return f"{0:.{digits}f}%"
    return f"{number:+,.{digits}f}%"

"""Latency and throughput distributions: percentiles and the figures of one
concurrency level, from raw per-request figures. Pure standard library, shared
by the runner's table and the service (which recomputes them from what it stores).

A percentile of fewer than two values is not a distribution: it is left None
and the reason is given instead (``Figure.reason``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from runners.stats import decode_tokens_per_s

MIN_VALUES = 2


@dataclass(frozen=True)
class Figure:
    """A computed figure, or None with the reason it could not be computed."""

    value: float | None
    reason: str = ""


def percentile(values: Sequence[float], q: float) -> float:
    """Return the ``q``-th percentile (0..100) of ``values``, linear between closest
    ranks (NumPy's default, Hyndman-Fan type 7). Raise ValueError for no values,
    a non-finite value, or ``q`` outside 0..100."""
    if not 0 <= q <= 100:
        raise ValueError("q must be within 0..100")
    ordered = sorted(float(v) for v in values)
    if not ordered:
        raise ValueError("no values")
    if any(not math.isfinite(v) for v in ordered):
        raise ValueError("values must be finite numbers")
    rank = (len(ordered) - 1) * q / 100.0
    low = math.floor(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def percentile_figure(values: Sequence[float], q: float, *, what: str) -> Figure:
    """Return the percentile as a Figure; None with the reason below two values."""
    if len(values) < MIN_VALUES:
        return Figure(None, f"p{q:g} of {what} needs at least {MIN_VALUES} values, got {len(values)}")
    return Figure(percentile(values, q))


def _get(item: Any, name: str) -> Any:
    return item.get(name) if isinstance(item, Mapping) else getattr(item, name, None)


def pooled_itl_ms(requests: Iterable[Any]) -> list[float]:
    """Return every inter-token gap (ms) of the given requests or samples, pooled."""
    return [float(g) for r in requests for g in (_get(r, "itl_ms") or [])]


@dataclass
class LevelStats:
    """The figures of one concurrency level; ``reasons`` names each None figure's cause."""

    n_ok: int = 0
    n_failed: int = 0
    output_tokens: int = 0
    span_s: float | None = None
    output_tokens_per_s: float | None = None
    requests_per_s: float | None = None
    decode_tokens_per_s_mean: float | None = None
    decode_tokens_per_s_p50: float | None = None
    decode_tokens_per_s_p90: float | None = None
    decode_tokens_per_s_p99: float | None = None
    ttft_ms_p50: float | None = None
    ttft_ms_p90: float | None = None
    ttft_ms_p99: float | None = None
    itl_ms_p50: float | None = None
    itl_ms_p99: float | None = None
    acceptance_pct: float | None = None
    energy_j_per_token: float | None = None
    reasons: dict[str, str] = field(default_factory=dict)

    def set(self, name: str, figure: Figure) -> None:
        setattr(self, name, figure.value)
        if figure.reason:
            self.reasons[name] = figure.reason


_PERCENTILES = (
    ("decode_tokens_per_s", "per-stream decode t/s", (50, 90, 99)),
    ("ttft_ms", "TTFT", (50, 90, 99)),
    ("itl_ms", "inter-token latency", (50, 99)),
)


def level_stats(
    requests: Sequence[Any],
    *,
    wall_s: float | None = None,
    energy_j: float | None = None,
    draft_n: int | None = None,
    draft_n_accepted: int | None = None,
) -> LevelStats:
    """Return the level's figures from its raw requests (mappings or objects with the
    request fields of docs/api.md: started_s, ended_s, ttft_ms, decode t/s server and
    client, tokens_generated, draft_n, draft_n_accepted, itl_ms, error).

    Aggregate output t/s and requests/s are over the span from the first send to the
    last end (``wall_s`` when the requests carry no times); failed requests count in
    the span but not in the figures. Acceptance is pooled over the requests that
    report draft counts, else the level-wide counts given."""
    out = LevelStats()
    ok = [r for r in requests if not _get(r, "error")]
    out.n_ok, out.n_failed = len(ok), len(requests) - len(ok)
    out.output_tokens = sum(int(_get(r, "tokens_generated") or 0) for r in ok)
    starts = [_get(r, "started_s") for r in requests if _get(r, "started_s") is not None]
    ends = [_get(r, "ended_s") for r in requests if _get(r, "ended_s") is not None]
    out.span_s = (max(ends) - min(starts)) if starts and ends else wall_s
    if not out.span_s or out.span_s <= 0:
        out.reasons["output_tokens_per_s"] = out.reasons["requests_per_s"] = "no request times"
    elif not ok:
        out.reasons["output_tokens_per_s"] = out.reasons["requests_per_s"] = "no request succeeded"
    else:
        out.output_tokens_per_s = out.output_tokens / out.span_s
        out.requests_per_s = len(ok) / out.span_s
    series = {
        "decode_tokens_per_s": [
            v
            for r in ok
            if (
                v := decode_tokens_per_s(
                    server=_get(r, "decode_tokens_per_s_server"), client=_get(r, "decode_tokens_per_s_client")
                )
            )
            is not None
        ],
        "ttft_ms": [float(_get(r, "ttft_ms")) for r in ok if _get(r, "ttft_ms") is not None],
        "itl_ms": pooled_itl_ms(ok),
    }
    decode = series["decode_tokens_per_s"]
    if decode:
        out.decode_tokens_per_s_mean = sum(decode) / len(decode)
    else:
        out.reasons["decode_tokens_per_s_mean"] = "no request gave a decode speed"
    for name, what, quantiles in _PERCENTILES:
        for q in quantiles:
            out.set(f"{name}_p{q}", percentile_figure(series[name], q, what=what))
    drafted = [(_get(r, "draft_n"), _get(r, "draft_n_accepted")) for r in ok]
    pairs = [(d, a) for d, a in drafted if d is not None and a is not None]
    if not pairs and draft_n is not None and draft_n_accepted is not None:
        pairs = [(draft_n, draft_n_accepted)]
    total = sum(d for d, _ in pairs)
    if total:
        out.acceptance_pct = 100.0 * sum(a for _, a in pairs) / total
    else:
        out.reasons["acceptance_pct"] = "nothing was drafted"
    energy_field = "energy_j_per_token"
    if energy_j is None:
        out.reasons[energy_field] = "no energy reading (no NVML)"
    elif not out.output_tokens:
        out.reasons[energy_field] = "no output tokens"
    else:
        out.energy_j_per_token = energy_j / out.output_tokens
    return out


def latency_percentiles(samples: Sequence[Any]) -> dict[str, Figure]:
    """Return TTFT p50/p90/p99 and inter-token latency p50/p99 of single-stream
    samples (mappings or objects with ``ttft_ms`` and ``itl_ms``)."""
    ttft = [float(_get(s, "ttft_ms")) for s in samples if _get(s, "ttft_ms") is not None]
    itl = pooled_itl_ms(samples)
    out = {f"ttft_ms_p{q}": percentile_figure(ttft, q, what="TTFT") for q in (50, 90, 99)}
    out.update({f"itl_ms_p{q}": percentile_figure(itl, q, what="inter-token latency") for q in (50, 99)})
    return out


@dataclass(frozen=True)
class StreamTime:
    """Where one stream's wall time went, from its requests one after another (a level
    of 1 stream): the reason its aggregate t/s is below its per-stream decode mean."""

    n_requests: int
    output_tokens: int
    span_s: float
    # Summed over the requests: time to first token (the prompt's processing) and decoding.
    first_token_s: float
    decode_s: float
    decode_tokens_per_s: list[float]

    @property
    def aggregate_tokens_per_s(self) -> float:
        """Output tokens over the wall time: the level's aggregate t/s."""
        return self.output_tokens / self.span_s

    @property
    def slowest_tokens_per_s(self) -> float:
        return min(self.decode_tokens_per_s)

    @property
    def fastest_tokens_per_s(self) -> float:
        return max(self.decode_tokens_per_s)

    @property
    def pooled_decode_tokens_per_s(self) -> float | None:
        """Output tokens over the time spent decoding them: decode speed without the wait for first tokens."""
        return self.output_tokens / self.decode_s if self.decode_s > 0 else None


def stream_time(requests: Sequence[Any]) -> StreamTime | None:
    """Return how the wall time of a single stream's requests (mappings or objects with
    docs/api.md's request fields) splits into waiting for first tokens and decoding;
    a request's decode time is its tokens over its decode speed. None without a
    successful request that has times, tokens and a decode speed."""
    ok = [r for r in requests if not _get(r, "error")]
    starts = [s for r in ok if (s := _get(r, "started_s")) is not None]
    ends = [e for r in ok if (e := _get(r, "ended_s")) is not None]
    speeds: list[float] = []
    tokens = decode_s = first_token_s = 0.0
    for r in ok:
        speed = decode_tokens_per_s(
            server=_get(r, "decode_tokens_per_s_server"), client=_get(r, "decode_tokens_per_s_client")
        )
        made = _get(r, "tokens_generated")
        if speed is None or speed <= 0 or not made:
            return None
        speeds.append(speed)
        tokens += made
        decode_s += made / speed
        first_token_s += float(_get(r, "ttft_ms") or 0) / 1000
    if not speeds or not starts or not ends or max(ends) <= min(starts):
        return None
    return StreamTime(
        n_requests=len(speeds),
        output_tokens=int(tokens),
        span_s=max(ends) - min(starts),
        first_token_s=first_token_s,
        decode_s=decode_s,
        decode_tokens_per_s=speeds,
    )

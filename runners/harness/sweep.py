"""Context sweep: at each depth, a prompt of exactly N tokens, then a short decode.

The prompt is built from a fixed corpus, tokenized by the server itself
(``/tokenize``) and cut to N token ids, which are sent as ids — so the depth
is exact whatever the tokenizer. A depth that does not fit the server's n_ctx
(N + decode tokens) is kept as a point with the reason in ``note``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import requests

from runners.config import GENERIC_OPENAI, SweepConfig
from runners.harness.measure import Sample, measure_stream
from runners.harness.power_source import PowerSource
from runners.harness.server import ServerHandle
from runners.harness.suite import Progress, apply_power, failure_reason
from runners.harness.workload import Workload
from runners.stats import relative_delta_pct, tokens_per_kwh

# Varied technical prose, numbered per block so no two blocks are identical
# (n-gram speculation must not find the prompt trivially repetitive).
CORPUS_V1 = (
    "The first stored-program computers kept their programs in the same memory as their data, "
    "which let a program rewrite itself and made compilers possible. Magnetic core memory replaced "
    "delay lines and cathode-ray tubes because it kept its contents without power and could be read "
    "in any order. Transistors made machines smaller and more reliable than vacuum tubes, and "
    "integrated circuits put many of them on one piece of silicon. Caches exist because processors "
    "became faster than the memory that feeds them; a miss can cost hundreds of cycles. Floating-point "
    "formats trade range for precision, and rounding errors accumulate in long sums unless the order "
    "of operations is chosen with care. Networks split messages into packets that may arrive out of "
    "order, so protocols number them and acknowledge what arrived. A hash function maps data of any "
    "size to a fixed-size value; a good one spreads similar inputs far apart. Graphics processors run "
    "thousands of simple threads at once, which suits the matrix products at the heart of neural "
    "networks. Quantization stores weights in fewer bits and loses a little accuracy for a large gain "
    "in speed and memory. "
)


_NEEDS = "an exact N-token prompt needs the server's own tokenizer"


def ctx_label(n_tokens: int) -> str:
    """Return '4K' for 4096, '198K' for 202752, the plain number otherwise."""
    return f"{n_tokens // 1024}K" if n_tokens % 1024 == 0 else str(n_tokens)


@dataclass
class SweepPoint:
    ctx_tokens: int
    ctx_label: str
    prefill_tokens_per_s: float | None = None
    decode_tokens_per_s: float | None = None
    ttft_ms: float | None = None
    power_w: float | None = None
    energy_j: float | None = None
    tokens_per_kwh: float | None = None
    prompt_tokens: int | None = None
    note: str = ""
    skipped: bool = False

    def payload(self) -> dict[str, Any]:
        """Return the sweep point object of the run payload (docs/api.md)."""
        return {
            "ctx_tokens": self.ctx_tokens,
            "ctx_label": self.ctx_label,
            "prefill_tokens_per_s": self.prefill_tokens_per_s,
            "decode_tokens_per_s": self.decode_tokens_per_s,
            "ttft_ms": self.ttft_ms,
            "power_w": self.power_w,
            "energy_j": self.energy_j,
            "tokens_per_kwh": self.tokens_per_kwh,
            "note": self.note,
        }


def tokenize(session: requests.Session, server: ServerHandle, text: str) -> list[int]:
    """Return the server's token ids for ``text`` (with BOS where the model uses one)."""
    if server.api == "llama.cpp":
        body: dict[str, Any] = {"content": text, "add_special": True}
    else:
        body = {"model": server.model_id, "prompt": text}
    headers = {**server.headers, "Connection": "close"}  # see measure_stream: no stale keep-alive
    resp = session.post(f"{server.base_url}/tokenize", json=body, timeout=600, headers=headers)
    resp.raise_for_status()
    tokens = resp.json()["tokens"]
    return [t if isinstance(t, int) else int(t["id"]) for t in tokens]


def prompt_ids(session: requests.Session, server: ServerHandle, n_tokens: int) -> list[int]:
    """Return exactly ``n_tokens`` ids of the numbered corpus."""
    per_block = max(1, len(tokenize(session, server, f"[1] {CORPUS_V1}")))
    blocks = n_tokens // per_block + 2
    text = "".join(f"[{i}] {CORPUS_V1}" for i in range(1, blocks + 1))
    ids = tokenize(session, server, text)
    while len(ids) < n_tokens:  # a tokenizer merging across blocks can need one more
        blocks += max(1, (n_tokens - len(ids)) // per_block + 1)
        ids = tokenize(session, server, "".join(f"[{i}] {CORPUS_V1}" for i in range(1, blocks + 1)))
    return ids[:n_tokens]


def _request(server: ServerHandle, ids: list[int], decode_tokens: int, workload: Workload) -> tuple[str, dict]:
    body: dict[str, Any] = {"prompt": ids, "stream": True, "cache_prompt": False, **workload.sampling()}
    if server.api == "llama.cpp":
        return f"{server.base_url}/completion", {**body, "n_predict": decode_tokens, "ignore_eos": True}
    body.update({"max_tokens": decode_tokens, "model": server.model_id, "stream_options": {"include_usage": True}})
    return f"{server.base_url}/v1/completions", body


def run_sweep(
    server: ServerHandle,
    config: SweepConfig,
    workload: Workload,
    *,
    monitor: PowerSource,
    session: requests.Session,
    progress: Progress | None = None,
    on_point: Callable[[SweepPoint], None] | None = None,
    points: list[SweepPoint] | None = None,
) -> tuple[list[SweepPoint], str]:
    """Return the points (skipped ones included) and a failure reason ('' when none).

    ``on_point`` is called with each point once it is measured, skipped or
    failed. Points are added to ``points`` (a new list if None) as they come,
    so a caller interrupted mid-sweep still has them."""
    points = points if points is not None else []
    depths = sorted(set(config.depths))
    for done, depth in enumerate(depths, start=1):
        point = SweepPoint(ctx_tokens=depth, ctx_label=ctx_label(depth))
        points.append(point)
        reason = _measure_point(server, config, workload, point, index=done, monitor=monitor, session=session)
        if on_point is not None:
            on_point(point)
        if reason is not None:
            return points, reason
        if progress is not None:
            progress("sweep", done, len(depths))
    return points, ""


def _measure_point(
    server: ServerHandle,
    config: SweepConfig,
    workload: Workload,
    point: SweepPoint,
    *,
    index: int,
    monitor: PowerSource,
    session: requests.Session,
) -> str | None:
    """Measure (or skip) one depth into ``point``; return why the sweep must stop, None to go on."""
    depth = point.ctx_tokens
    needed = depth + config.decode_tokens
    if server.api == GENERIC_OPENAI:
        point.skipped, point.note = True, f"skipped: a generic OpenAI-compatible server has no /tokenize; {_NEEDS}"
        return None
    if server.n_ctx is not None and needed > server.n_ctx:
        point.skipped = True
        point.note = f"skipped: needs {needed} tokens ({depth} + {config.decode_tokens}), n_ctx is {server.n_ctx}"
        return None
    try:
        ids = prompt_ids(session, server, depth)
    except requests.HTTPError as exc:
        status = exc.response.status_code if exc.response is not None else None
        if status in (404, 405, 501):
            point.skipped, point.note = True, f"skipped: the server has no /tokenize (HTTP {status}); {_NEEDS}"
        else:
            point.note = f"error: could not build the prompt with /tokenize: {exc}"
        return None
    except (requests.RequestException, ValueError, KeyError) as exc:
        point.note = f"error: could not build the prompt with /tokenize: {exc}"
        alive, why = server.alive()
        return None if alive else f"sweep at {point.ctx_label}: {why}"
    url, body = _request(server, ids, config.decode_tokens, workload)
    with monitor.window() as window:
        sample = measure_stream(
            session,
            url,
            body,
            index=index,
            timeout_s=config.request_timeout_s,
            headers=server.headers,
            server_timings=server.server_timings,
        )
    apply_power(sample, window.reading)
    if not sample.ok:
        point.note = f"error: {sample.error}"
        if sample.error_kind in ("timeout", "connection"):
            return failure_reason(server, sample, f"sweep at {point.ctx_label}")
        return None
    _fill(point, sample, depth)
    return None


def _fill(point: SweepPoint, sample: Sample, depth: int) -> None:
    point.prompt_tokens = sample.prompt_tokens
    point.prefill_tokens_per_s = sample.prefill_tokens_per_s
    if point.prefill_tokens_per_s is None and sample.ttft_ms:
        point.prefill_tokens_per_s = depth / (sample.ttft_ms / 1000.0)
    point.decode_tokens_per_s = sample.decode_tokens_per_s
    point.ttft_ms = sample.ttft_ms
    point.power_w = sample.power_w_mean
    point.energy_j = sample.energy_j
    point.tokens_per_kwh = tokens_per_kwh(sample.tokens_generated or 0, sample.energy_j)
    notes = []
    if sample.prompt_tokens is not None and sample.prompt_tokens != depth:
        notes.append(f"server processed {sample.prompt_tokens} prompt tokens, not {depth}")
    if sample.cached_prompt_tokens:
        notes.append(f"{sample.cached_prompt_tokens} prompt tokens came from the cache")
    point.note = "; ".join(notes)


def sweep_deltas(points: list[SweepPoint]) -> list[dict[str, Any]]:
    """Return per measured point the % change of decode and prefill t/s against the first measured depth."""
    measured = [p for p in points if p.decode_tokens_per_s is not None]
    if not measured:
        return []
    base = measured[0]
    return [
        {
            "ctx_tokens": p.ctx_tokens,
            "decode_delta_pct": relative_delta_pct(p.decode_tokens_per_s, base.decode_tokens_per_s),
            "prefill_delta_pct": relative_delta_pct(p.prefill_tokens_per_s, base.prefill_tokens_per_s),
        }
        for p in measured
    ]

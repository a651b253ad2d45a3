"""Concurrency sweep: at each level N streams send the workload's prompt at once.

Closed loop, as vLLM's ``bench serve --max-concurrency`` and llama-benchy run it:
N threads start together (a barrier), each sends one request, and a stream whose
request ended sends the next, until ``requests_per_level`` requests were sent in
all. Each request is timed by ``measure_stream`` (its own clock and the server's
``timings``); the raw per-request figures are kept, and the statistics are the
service's (runners/distribution.py for both). NVML energy covers the whole
level, so it gives J per output token, not per request.

Threads, not asyncio: each stream spends its time blocked in a socket read, which
releases the GIL, and ``measure_stream`` is the same code the single-stream
suite times with (benchmarks/concurrency_accuracy.py measures what threads cost).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import requests

from runners.distribution import level_stats
from runners.harness.measure import Sample, measure_stream, scrape_spec_counters, spec_counter_delta
from runners.harness.power_source import PowerSource
from runners.harness.server import ServerHandle
from runners.harness.workload import Workload

Progress = Callable[[str, int, int], None]


@dataclass
class RequestResult:
    """One request of a level: which stream sent it, when, and its Sample."""

    index: int
    stream: int
    started_s: float  # seconds after the level started
    ended_s: float
    sample: Sample

    def payload(self) -> dict[str, Any]:
        """Return the request object of a concurrency level (docs/api.md)."""
        s = self.sample
        return {
            "index": self.index,
            "stream": self.stream,
            "started_s": round(self.started_s, 6),
            "ended_s": round(self.ended_s, 6),
            "ttft_ms": s.ttft_ms,
            "decode_tokens_per_s_client": s.decode_tokens_per_s_client,
            "decode_tokens_per_s_server": s.decode_tokens_per_s_server,
            "prompt_tokens": s.prompt_tokens,
            "tokens_generated": s.tokens_generated,
            "draft_n": s.draft_n,
            "draft_n_accepted": s.draft_n_accepted,
            "itl_ms": s.itl_ms,
            "error": s.error[:500],
        }


@dataclass
class LevelResult:
    """One concurrency level: its requests, its wall time and the GPUs' energy over it."""

    concurrency: int
    n_requests: int
    requests: list[RequestResult] = field(default_factory=list)
    wall_s: float | None = None
    energy_j: float | None = None
    power_w_mean: float | None = None
    # Level-wide draft counts, for a server that gives none per request (vLLM's /metrics).
    draft_n: int | None = None
    draft_n_accepted: int | None = None
    note: str = ""

    @property
    def failed(self) -> list[RequestResult]:
        return [r for r in self.requests if not r.sample.ok]

    def payload(self) -> dict[str, Any]:
        """Return the concurrency level object of the run payload (docs/api.md)."""
        return {
            "concurrency": self.concurrency,
            "n_requests": self.n_requests,
            "wall_s": self.wall_s,
            "energy_j": self.energy_j,
            "power_w_mean": self.power_w_mean,
            "draft_n": self.draft_n,
            "draft_n_accepted": self.draft_n_accepted,
            "note": self.note,
            "requests": [r.payload() for r in sorted(self.requests, key=lambda r: r.index)],
        }


def run_level(
    server: ServerHandle,
    workload: Workload,
    *,
    concurrency: int,
    n_requests: int,
    monitor: PowerSource,
) -> LevelResult:
    """Return one level measured: ``concurrency`` streams, ``n_requests`` requests in all.

    Never raises for the server's faults: a failed request keeps its error (and
    stops its stream from sending more), the others go on."""
    level = LevelResult(concurrency=concurrency, n_requests=n_requests)
    url = f"{server.base_url}/v1/chat/completions"
    body = server.adapt(workload.chat_body(model=server.model_id))
    lock = threading.Lock()
    next_index = [0]
    barrier = threading.Barrier(concurrency)
    origin = [0.0]

    def take() -> int | None:
        with lock:
            if next_index[0] >= n_requests:
                return None
            next_index[0] += 1
            return next_index[0]

    def stream(number: int) -> None:
        with requests.Session() as session:
            barrier.wait()
            while (index := take()) is not None:
                sample = measure_stream(
                    session,
                    url,
                    body,
                    index=index,
                    timeout_s=workload.request_timeout_s,
                    disagreement_pct=workload.disagreement_pct,
                    headers=server.headers,
                    server_timings=server.server_timings,
                )
                sent = sample.sent_at if sample.sent_at is not None else origin[0]
                ended = sample.ended_at if sample.ended_at is not None else time.perf_counter()
                result = RequestResult(index, number, sent - origin[0], ended - origin[0], sample)
                with lock:
                    level.requests.append(result)
                if not sample.ok:
                    return

    counters = server.api == "vllm"
    with requests.Session() as http:
        before = scrape_spec_counters(http, server.base_url, server.headers) if counters else None
        threads = [threading.Thread(target=stream, args=(n,), daemon=True) for n in range(1, concurrency + 1)]
        with monitor.window() as window:
            origin[0] = time.perf_counter()
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            level.wall_s = time.perf_counter() - origin[0]
        if counters:
            after = scrape_spec_counters(http, server.base_url, server.headers)
            level.draft_n, level.draft_n_accepted, why = spec_counter_delta(before, after)
            if why:
                level.note = f"draft counts unavailable: {why}"
    reading = window.reading
    level.energy_j, level.power_w_mean = reading.energy_j, reading.power_w_mean
    if level.failed:
        first = min(level.failed, key=lambda r: r.index)
        level.note = "; ".join(
            filter(None, [level.note, f"{len(level.failed)} request(s) failed, first: {first.sample.error[:200]}"])
        )
    return level


def run_concurrency(
    server: ServerHandle,
    workload: Workload,
    *,
    levels: list[int],
    requests_per_level: int,
    monitor: PowerSource,
    progress: Progress | None = None,
    on_level: Callable[[LevelResult], None] | None = None,
    results: list[LevelResult] | None = None,
) -> tuple[list[LevelResult], str]:
    """Return the levels measured (lowest first) and a failure reason ('' when none).

    A level where any request failed is kept with its requests and ends the sweep
    if the server is gone; a live server goes on to the next level."""
    results = results if results is not None else []
    ordered = sorted(set(levels))
    for done, concurrency in enumerate(ordered, start=1):
        level = run_level(server, workload, concurrency=concurrency, n_requests=requests_per_level, monitor=monitor)
        results.append(level)
        if on_level is not None:
            on_level(level)
        if level.failed:
            alive, why = server.alive()
            if not alive:
                return results, f"concurrency {concurrency}: {why} ({level.failed[0].sample.error})"
        if progress is not None:
            progress("concurrency", done, len(ordered))
    return results, ""


def _num(value: float | None, digits: int = 1) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def concurrency_table(levels: list[dict[str, Any]]) -> str:
    """Return the markdown table of concurrency levels (payload shape), figures from
    runners.distribution as the service computes them; '' without levels."""
    if not levels:
        return ""
    lines = [
        "| streams | requests ok | aggregate t/s | per-stream t/s mean | p50 | p90 | TTFT p50 ms | TTFT p90 ms "
        "| ITL p50 ms | ITL p99 ms | accept % | J/token |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for level in levels:
        s = level_stats(
            level["requests"],
            wall_s=level["wall_s"],
            energy_j=level["energy_j"],
            draft_n=level["draft_n"],
            draft_n_accepted=level["draft_n_accepted"],
        )
        lines.append(
            f"| {level['concurrency']} | {s.n_ok}/{level['n_requests']} | {_num(s.output_tokens_per_s)} "
            f"| {_num(s.decode_tokens_per_s_mean)} | {_num(s.decode_tokens_per_s_p50)} "
            f"| {_num(s.decode_tokens_per_s_p90)} | {_num(s.ttft_ms_p50, 0)} | {_num(s.ttft_ms_p90, 0)} "
            f"| {_num(s.itl_ms_p50, 2)} | {_num(s.itl_ms_p99, 2)} | {_num(s.acceptance_pct)} "
            f"| {_num(s.energy_j_per_token, 3)} |"
        )
    return "\n".join(lines)

"""One streamed request → one Sample: the client's own clock plus the server's timings.

A measurement records an error instead of raising: the suite decides what a
failed repetition means for the run. Both OpenAI chat chunks
(``choices[0].delta.content``) and llama-server's native ``/completion`` chunks
(``content``) are understood, so the sweep can send an exact token-id prompt.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import requests
from urllib3.exceptions import ReadTimeoutError

from runners import stats

_STOP_TYPES = {"limit": "length", "eos": "stop", "word": "stop", "none": ""}


@dataclass
class Sample:
    """One repetition's raw figures. Unmeasured figures are None, never 0."""

    index: int
    ttft_ms: float | None = None
    decode_tokens_per_s_client: float | None = None
    decode_tokens_per_s_server: float | None = None
    prefill_tokens_per_s: float | None = None
    prompt_tokens: int | None = None
    cached_prompt_tokens: int | None = None
    tokens_generated: int | None = None
    draft_n: int | None = None
    draft_n_accepted: int | None = None
    stop_reason: str = ""
    text: str = ""
    output_ok: bool | None = None
    flags: list[str] = field(default_factory=list)
    energy_j: float | None = None
    power_w_mean: float | None = None
    power_w_peak: float | None = None
    vram_peak_mib: float | None = None
    power: dict[str, Any] | None = None
    decode_s: float | None = None
    decode_cpu_s: float | None = None  # this process's CPU time over the decode (harness overhead)
    system_fingerprint: str = ""
    # Where tokens_generated came from: timings (llama.cpp's own count), usage (the
    # OpenAI stream's final usage), chunks (content chunks counted: a server that
    # sends several tokens per chunk is under-counted) or '' (none generated).
    tokens_source: str = ""
    # perf_counter() when the request was sent and when its stream ended, and each
    # content chunk's arrival in seconds after the send (the first is the TTFT):
    # the gaps between chunks are the inter-token latencies.
    sent_at: float | None = None
    ended_at: float | None = None
    chunk_times_s: list[float] = field(default_factory=list)
    error: str = ""
    error_kind: str = ""  # timeout | connection | http | protocol

    @property
    def ok(self) -> bool:
        return not self.error

    @property
    def decode_tokens_per_s(self) -> float | None:
        """Return the server's decode t/s when it reported one, else the client's."""
        return stats.decode_tokens_per_s(server=self.decode_tokens_per_s_server, client=self.decode_tokens_per_s_client)

    @property
    def build_decode_tokens_per_s(self) -> float | None:
        """Return the decode t/s builds are compared by: the client's, else the server's
        (``stats.build_decode_tokens_per_s``)."""
        return stats.build_decode_tokens_per_s(
            server=self.decode_tokens_per_s_server, client=self.decode_tokens_per_s_client
        )

    @property
    def itl_ms(self) -> list[float]:
        """Return the gaps between consecutive content chunks in ms (one per chunk
        after the first; a chunk carrying several tokens counts as one gap)."""
        times = self.chunk_times_s
        return [round((b - a) * 1000.0, 2) for a, b in zip(times, times[1:], strict=False)]

    def payload(self) -> dict[str, Any]:
        """Return the sample object of the run payload (docs/api.md)."""
        return {
            "index": self.index,
            "decode_tokens_per_s_server": self.decode_tokens_per_s_server,
            "decode_tokens_per_s_client": self.decode_tokens_per_s_client,
            "prefill_tokens_per_s": self.prefill_tokens_per_s,
            "ttft_ms": self.ttft_ms,
            "prompt_tokens": self.prompt_tokens,
            "tokens_generated": self.tokens_generated,
            "draft_n": self.draft_n,
            "draft_n_accepted": self.draft_n_accepted,
            "energy_j": self.energy_j,
            "power_w_mean": self.power_w_mean,
            "power_w_peak": self.power_w_peak,
            "vram_peak_mib": self.vram_peak_mib,
            "stop_reason": self.stop_reason,
            "output_ok": self.output_ok,
            "flags": list(self.flags),
            "itl_ms": self.itl_ms,
        }


def measure_stream(
    session: requests.Session,
    url: str,
    body: Mapping[str, Any],
    *,
    index: int,
    timeout_s: float,
    disagreement_pct: float = 3.0,
    headers: Mapping[str, str] | None = None,
    server_timings: bool = True,
) -> Sample:
    """POST ``body`` (with stream on) to ``url`` and time it; return the Sample.

    Client decode t/s is (tokens - 1) / (last token - first token), the same
    interval llama-server's ``predicted_per_second`` uses (its first token comes
    free with the prompt's logits). ``timeout_s`` bounds the silence between two
    reads (the prefill included): a hung server becomes error_kind 'timeout'.
    The total time is bounded by the request's token budget. With
    ``server_timings`` False (a generic OpenAI-compatible server) llama.cpp's
    ``timings`` are ignored even if sent: the server figures stay None and the
    token count comes from ``usage``, else from the chunks (``tokens_source``)."""
    sample = Sample(index=index)
    started = sample.sent_at = time.perf_counter()
    arrivals = sample.chunk_times_s
    t_first: float | None = None
    t_last: float | None = None
    t_finish: float | None = None
    cpu_first = cpu_end = 0.0
    n_chunks = 0
    pieces: list[str] = []
    timings: dict[str, Any] = {}
    usage: dict[str, Any] = {}
    try:
        # A fresh connection per request: llama-server closes idle keep-alive
        # connections, and a reused dead one would fail a repetition for nothing.
        fresh = {"Connection": "close", **(headers or {})}
        with session.post(url, json=dict(body), stream=True, timeout=(10.0, timeout_s), headers=fresh) as resp:
            if resp.status_code != 200:
                sample.error = f"HTTP {resp.status_code}: {resp.text[:500]}"
                sample.error_kind = "http"
                return sample
            for raw in resp.iter_lines(chunk_size=None):
                now = time.perf_counter()
                if not raw.startswith(b"data:"):
                    continue
                data = raw[5:].strip()
                if data == b"[DONE]":
                    break
                chunk = json.loads(data)
                if "error" in chunk:
                    sample.error = f"server error: {json.dumps(chunk['error'])[:500]}"
                    sample.error_kind = "http"
                    return sample
                sample.system_fingerprint = chunk.get("system_fingerprint") or sample.system_fingerprint
                text, finish = _chunk_text(chunk)
                if text:
                    pieces.append(text)
                    n_chunks += 1
                    arrivals.append(now - started)
                    if t_first is None:
                        t_first, cpu_first = now, time.process_time()
                    t_last = now
                if finish:
                    sample.stop_reason = finish
                    t_finish = now
                    cpu_end = time.process_time()
                timings = chunk.get("timings") or timings
                usage = chunk.get("usage") or usage
    except requests.Timeout as exc:
        sample.error, sample.error_kind = f"timed out: {exc}", "timeout"
    except (requests.ConnectionError, requests.exceptions.ChunkedEncodingError) as exc:
        # requests reports a read timeout in the middle of a stream as a ConnectionError.
        if isinstance(exc.args[0] if exc.args else None, ReadTimeoutError) or "Read timed out" in str(exc):
            sample.error, sample.error_kind = f"timed out: no data for {timeout_s:g} s ({exc})", "timeout"
        else:
            sample.error, sample.error_kind = f"connection lost: {exc}", "connection"
    except (ValueError, KeyError, TypeError) as exc:
        sample.error, sample.error_kind = f"unreadable stream: {exc}", "protocol"
    sample.ended_at = time.perf_counter()
    sample.text = "".join(pieces)
    _apply_server_timings(sample, timings if server_timings else {}, usage)
    if sample.tokens_generated is None and n_chunks:
        sample.tokens_generated, sample.tokens_source = n_chunks, "chunks"
        # One chunk is one token on most servers, several on some (vLLM drafting):
        # the count, and the decode t/s from it, may then be low.
        sample.flags.append("tokens_counted_from_chunks")
    if t_first is not None:
        sample.ttft_ms = (t_first - started) * 1000.0
        # The chunk carrying the finish reason arrives when the last counted token
        # (an EOS included) was sampled; without one, the last content chunk.
        end = t_finish if t_finish is not None else t_last
        if end is not None and end > t_first:
            sample.decode_s = end - t_first
            sample.decode_cpu_s = (cpu_end or time.process_time()) - cpu_first
            if sample.tokens_generated and sample.tokens_generated > 1:
                sample.decode_tokens_per_s_client = (sample.tokens_generated - 1) / sample.decode_s
    if not sample.error and t_first is None:
        sample.flags.append("no_tokens")
    _flag_disagreement(sample, disagreement_pct)
    return sample


def _chunk_text(chunk: Mapping[str, Any]) -> tuple[str, str]:
    """Return (generated text, finish reason) of one stream chunk, either format."""
    choices = chunk.get("choices")
    if isinstance(choices, list):
        if not choices:
            return "", ""
        choice = choices[0]
        delta = choice.get("delta") or {}
        text = (delta.get("content") or "") + (delta.get("reasoning_content") or "") + (choice.get("text") or "")
        return text, choice.get("finish_reason") or ""
    text = chunk.get("content") or ""
    finish = ""
    if chunk.get("stop"):
        finish = _STOP_TYPES.get(str(chunk.get("stop_type", "")), str(chunk.get("stop_type", "")))
    return text, finish


def _apply_server_timings(sample: Sample, timings: Mapping[str, Any], usage: Mapping[str, Any]) -> None:
    if timings:
        sample.prompt_tokens = _int(timings.get("prompt_n"))
        sample.cached_prompt_tokens = _int(timings.get("cache_n"))
        sample.tokens_generated = _int(timings.get("predicted_n"))
        sample.tokens_source = "timings" if sample.tokens_generated is not None else ""
        sample.prefill_tokens_per_s = _positive(timings.get("prompt_per_second"))
        sample.decode_tokens_per_s_server = _positive(timings.get("predicted_per_second"))
        sample.draft_n = _int(timings.get("draft_n"))
        sample.draft_n_accepted = _int(timings.get("draft_n_accepted"))
        if sample.cached_prompt_tokens:
            # The prompt cache was asked off; a cache hit would flatter prefill.
            sample.flags.append(f"prompt_cache_hit:{sample.cached_prompt_tokens}")
    if usage:
        if sample.prompt_tokens is None:
            sample.prompt_tokens = _int(usage.get("prompt_tokens"))
        if sample.tokens_generated is None:
            sample.tokens_generated = _int(usage.get("completion_tokens"))
            sample.tokens_source = "usage" if sample.tokens_generated is not None else ""


def _flag_disagreement(sample: Sample, limit_pct: float) -> None:
    client, server = sample.decode_tokens_per_s_client, sample.decode_tokens_per_s_server
    if client is None or server is None or server <= 0:
        return
    delta = 100.0 * (client - server) / server
    if abs(delta) > limit_pct:
        sample.flags.append(f"decode_client_server_disagree:{delta:+.1f}%")


def _int(value: Any) -> int | None:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _positive(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and value > 0 else None


# One sample line of the Prometheus text format: name, optional labels (quoted
# values may hold any character, '}' included), value; a timestamp may follow.
_METRIC_LINE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(?:[^}"]|"(?:[^"\\]|\\.)*")*\})?\s+(\S+)')
# vLLM's speculative-decoding counters. prometheus_client exposes a counter named
# ``x`` as ``x_total`` (plus an ``x_created`` timestamp, ignored); the bare name
# is read only from an exporter that gives no ``_total`` sample.
_VLLM_DRAFTED = "vllm:spec_decode_num_draft_tokens"
_VLLM_ACCEPTED = "vllm:spec_decode_num_accepted_tokens"


def parse_spec_counters(metrics_text: str) -> tuple[int, int] | None:
    """Return (drafted, accepted) token counters summed over label sets (engines,
    models) from Prometheus text; None when the server exports neither."""
    sums: dict[str, float] = {}
    for line in metrics_text.splitlines():
        match = _METRIC_LINE.match(line)
        if not match or match.group(1) not in _COUNTER_NAMES:
            continue
        try:
            value = float(match.group(3))
        except ValueError:
            continue
        if value == value:  # NaN: an unset counter
            sums[match.group(1)] = sums.get(match.group(1), 0.0) + value
    counts = []
    for base in (_VLLM_DRAFTED, _VLLM_ACCEPTED):
        total = sums.get(f"{base}_total", sums.get(base))
        counts.append(total)
    if counts[0] is None and counts[1] is None:
        return None
    return int(counts[0] or 0), int(counts[1] or 0)


_COUNTER_NAMES = frozenset({_VLLM_DRAFTED, f"{_VLLM_DRAFTED}_total", _VLLM_ACCEPTED, f"{_VLLM_ACCEPTED}_total"})


def scrape_spec_counters(
    session: requests.Session, base_url: str, headers: Mapping[str, str] | None = None
) -> tuple[int, int] | None:
    """Return vLLM's cumulative (drafted, accepted) from ``/metrics``; None if unavailable."""
    try:
        resp = session.get(f"{base_url}/metrics", timeout=5, headers={**(headers or {}), "Connection": "close"})
    except requests.RequestException:
        return None
    if resp.status_code != 200:
        return None
    return parse_spec_counters(resp.text)


def spec_counter_delta(
    before: tuple[int, int] | None, after: tuple[int, int] | None
) -> tuple[int | None, int | None, str]:
    """Return (draft_n, draft_n_accepted, why they are None) for one repetition from
    the cumulative counters read before and after it. No counters either time is
    a server that does not draft: None, no reason. A counter that went down (the
    server restarted) or one missing read gives None with the reason."""
    if before is None and after is None:
        return None, None, ""
    if before is None or after is None:
        return None, None, "/metrics gave no spec-decode counters " + ("before" if before is None else "after")
    drafted, accepted = after[0] - before[0], after[1] - before[1]
    if drafted < 0 or accepted < 0:
        return None, None, "the /metrics counters went down (the server restarted?)"
    if accepted > drafted:
        # The service refuses such a sample: a read that caught one counter updated
        # and not the other.
        return None, None, f"accepted {accepted} > drafted {drafted}: /metrics was read mid-update"
    return drafted, accepted, ""

"""Attach mode against a vLLM server: its /metrics spec-decode counters, read before
and after each repetition, give the repetition's draft counts.

No vLLM runs here (it needs a GPU), so a small local HTTP server stands in for
its surface: ``/metrics`` answers a recorded vLLM export (tests/fixtures/vllm/,
one text per read, in order), ``/v1/models`` vLLM's model list, and
``/v1/chat/completions`` is passed through to the real llama-server, so the
stream measured is a real one. It has no ``/tokenize``."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import requests

from runners.config import AttachConfig, SweepConfig, WorkloadConfig
from runners.harness.measure import parse_spec_counters, scrape_spec_counters, spec_counter_delta
from runners.harness.power import PowerMonitor
from runners.harness.server import AttachedServer
from runners.harness.suite import measure_once
from runners.harness.sweep import run_sweep
from runners.harness.workload import Workload
from tests.fixtures.loopback import QuietHandler

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "vllm"
BEFORE = (FIXTURES / "metrics_before.txt").read_text()
AFTER = (FIXTURES / "metrics_after.txt").read_text()
MODELS = {
    "object": "list",
    "data": [
        {
            "id": "Qwen/Qwen3-8B",
            "object": "model",
            "created": 1795300000,
            "owned_by": "vllm",
            "root": "Qwen/Qwen3-8B",
            "parent": None,
            "max_model_len": 4096,
        }
    ],
}


class VllmSurface(ThreadingHTTPServer):
    """The HTTP surface described in the module docstring; ``requests`` logs the paths asked."""

    def __init__(self, metrics: list[str], upstream: str = "") -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.metrics = list(metrics)
        self.upstream = upstream
        self.requests: list[str] = []
        self.bodies: list[dict[str, Any]] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(QuietHandler):
    server: VllmSurface

    def do_GET(self) -> None:
        self.server.requests.append(f"GET {self.path}")
        if self.path == "/metrics":
            text = self.server.metrics.pop(0) if len(self.server.metrics) > 1 else self.server.metrics[0]
            self.send_body(200, text.encode(), "text/plain; version=0.0.4; charset=utf-8")
        elif self.path == "/v1/models":
            self.send_body(200, json.dumps(MODELS).encode(), "application/json")
        else:
            self.send_body(404, b'{"detail":"Not Found"}', "application/json")

    def do_POST(self) -> None:
        self.server.requests.append(f"POST {self.path}")
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.bodies.append(body)
        if self.path != "/v1/chat/completions" or not self.server.upstream:
            self.send_body(404, b'{"detail":"Not Found"}', "application/json")
            return
        # The model name is vLLM's; the llama-server behind it serves its only model.
        upstream = requests.post(
            f"{self.server.upstream}/v1/chat/completions", json={**body, "model": ""}, stream=True, timeout=600
        )
        self.send_response(upstream.status_code)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()  # HTTP/1.0: the stream ends when the connection closes
        for chunk in upstream.iter_content(chunk_size=None):
            self.wfile.write(chunk)
            self.wfile.flush()


def serve(metrics: list[str], upstream: str = "") -> Iterator[VllmSurface]:
    surface = VllmSurface(metrics, upstream)
    thread = threading.Thread(target=surface.serve_forever, daemon=True)
    thread.start()
    try:
        yield surface
    finally:
        surface.shutdown()
        surface.server_close()


def test_it_reads_the_counters_of_a_recorded_vllm_export() -> None:
    # The _created timestamps, the per-position counters and the drafts count are not token counts.
    assert parse_spec_counters(BEFORE) == (1707, 1430)
    assert parse_spec_counters(AFTER) == (2103, 1748)
    two_engines = BEFORE + BEFORE.replace('engine="0"', 'engine="1"')
    assert parse_spec_counters(two_engines) == (2 * 1707, 2 * 1430)
    odd_label = BEFORE.replace('model_name="Qwen/Qwen3-8B"', 'model_name="a} b\\"c"')
    assert parse_spec_counters(odd_label) == (1707, 1430)
    without = "\n".join(line for line in BEFORE.splitlines() if "spec_decode" not in line)
    assert parse_spec_counters(without) is None


def test_the_delta_of_two_reads_is_the_repetitions_draft_counts() -> None:
    assert spec_counter_delta((1707, 1430), (2103, 1748)) == (396, 318, "")
    assert spec_counter_delta((1707, 1430), (5, 2)) == (
        None,
        None,
        "the /metrics counters went down (the server restarted?)",
    )
    drafted, accepted, why = spec_counter_delta(None, (5, 2))
    assert (drafted, accepted) == (None, None) and "before" in why
    assert spec_counter_delta(None, None) == (None, None, "")  # a server that does not draft


@pytest.fixture
def vllm_metrics_only() -> Iterator[VllmSurface]:
    yield from serve([BEFORE, AFTER])


def test_it_scrapes_the_counters_over_http_and_detects_vllm(vllm_metrics_only: VllmSurface) -> None:
    with requests.Session() as session:
        before = scrape_spec_counters(session, vllm_metrics_only.url)
        after = scrape_spec_counters(session, vllm_metrics_only.url)
    assert spec_counter_delta(before, after) == (396, 318, "")
    server = AttachedServer(AttachConfig(url=vllm_metrics_only.url)).start()
    assert (server.engine, server.api, server.n_ctx, server.model_id) == ("vllm", "vllm", 4096, "Qwen/Qwen3-8B")
    assert server.props == {} and server.gguf is None and "build" in server.unavailable
    assert "draft counts come from /metrics" in server.unavailable["server_timings"]


def test_a_sweep_against_a_server_without_tokenize_is_skipped_with_the_reason(
    vllm_metrics_only: VllmSurface,
) -> None:
    server = AttachedServer(AttachConfig(url=vllm_metrics_only.url, engine="vllm")).start()
    workload = Workload.from_config(WorkloadConfig(max_tokens=8, repetitions=1, warmup=0))
    with requests.Session() as session:
        points, reason = run_sweep(
            server, SweepConfig(enabled=True, depths=[256, 512]), workload, monitor=PowerMonitor(), session=session
        )
    assert reason == ""
    assert [(p.ctx_tokens, p.skipped) for p in points] == [(256, True), (512, True)]
    for point in points:
        assert point.note.startswith("skipped: the server has no /tokenize (HTTP 404)")
        assert point.decode_tokens_per_s is None and point.prefill_tokens_per_s is None
    assert not any(r.startswith("POST /v1/completions") for r in vllm_metrics_only.requests)


@pytest.mark.llama
def test_a_repetition_takes_its_draft_counts_from_the_metrics_around_it(gemma_server: Any) -> None:
    # Detecting the engine reads /metrics once; then one read before the request, one after.
    for surface in serve([BEFORE, BEFORE, AFTER], upstream=gemma_server.base_url):
        server = AttachedServer(AttachConfig(url=surface.url)).start()
        workload = Workload.from_config(WorkloadConfig(max_tokens=8, repetitions=1, warmup=0))
        with requests.Session() as session:
            sample = measure_once(server, workload, index=1, monitor=PowerMonitor(), session=session)
        assert sample.ok, sample.error
        assert (sample.draft_n, sample.draft_n_accepted) == (396, 318)
        # The stream is llama-server's and carries its timings; a vLLM server's API has
        # none, so none are taken: the decode speed is the client's.
        assert sample.decode_tokens_per_s_server is None and sample.prefill_tokens_per_s is None
        assert sample.decode_tokens_per_s_client is not None and sample.decode_tokens_per_s_client > 0
        assert sample.tokens_source == "usage" and 1 <= (sample.tokens_generated or 0) <= 8
        # /metrics was read just before and just after the request, nothing between.
        asked = [r for r in surface.requests if r in ("GET /metrics", "POST /v1/chat/completions")]
        assert asked[-3:] == ["GET /metrics", "POST /v1/chat/completions", "GET /metrics"]
        assert surface.bodies[-1]["model"] == "Qwen/Qwen3-8B" and surface.bodies[-1]["top_k"] == 20

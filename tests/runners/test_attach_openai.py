"""Attach mode against a plain OpenAI-compatible server: the real llama-server,
with the runner told the engine is generic ``openai``. It must then use nothing
llama-specific (no /props, /health, /tokenize, no ``timings`` even though this
server sends them): server figures are null with the reason recorded, decode t/s
is the client's, tokens come from the stream's ``usage`` or, without it, from
the chunks counted."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import requests

from leaderboard.results.models import Rig, RigToken
from runners.config import AttachConfig, SweepConfig, WorkloadConfig
from runners.harness.measure import measure_stream
from runners.harness.power import PowerMonitor
from runners.harness.server import AttachedServer
from runners.harness.suite import run_suite
from runners.harness.sweep import run_sweep
from runners.harness.workload import Workload

pytestmark = pytest.mark.llama

LLAMA_ONLY = ("cache_prompt", "chat_template_kwargs", "top_k", "min_p")


@pytest.fixture
def generic(gemma_server: Any) -> AttachedServer:
    return AttachedServer(AttachConfig(url=gemma_server.base_url, engine="openai")).start()


def small_workload(**overrides: Any) -> Workload:
    return Workload.from_config(WorkloadConfig(max_tokens=8, repetitions=1, warmup=0, **overrides))


def test_a_generic_server_is_asked_nothing_beyond_v1(generic: AttachedServer, gemma_server: Any) -> None:
    assert (generic.engine, generic.api, generic.server_timings) == ("other", "openai", False)
    # What /props would have told (llama-server's n_ctx, build, model path) is not taken.
    assert generic.props == {} and generic.n_ctx is None and generic.build == "" and generic.model_path == ""
    assert set(generic.unavailable) == {"n_ctx", "build", "server_timings"}
    assert generic.model_id == gemma_server.model_id  # from /v1/models
    body = generic.adapt(small_workload().chat_body(model=generic.model_id))
    assert not set(LLAMA_ONLY) & set(body) and body["stream_options"] == {"include_usage": True}
    assert generic.alive() == (True, "/v1/models answered 200")


def test_a_repetition_uses_the_clients_clock_and_the_streams_usage(generic: AttachedServer) -> None:
    result = run_suite(generic, small_workload(), monitor=PowerMonitor())
    assert result.status == "finished", result.failure_reason
    (sample,) = result.samples
    assert sample.decode_tokens_per_s_server is None and sample.prefill_tokens_per_s is None
    assert sample.draft_n is None and sample.draft_n_accepted is None  # the server drafts, but cannot say so here
    assert sample.cached_prompt_tokens is None
    assert sample.decode_tokens_per_s_client is not None and sample.decode_tokens_per_s_client > 0
    assert sample.ttft_ms is not None and sample.ttft_ms > 0
    assert sample.tokens_source == "usage" and sample.prompt_tokens is not None and sample.prompt_tokens > 200
    assert (sample.tokens_generated == 8) == (sample.stop_reason == "length")


def test_without_usage_in_the_stream_the_tokens_are_the_chunks_counted(generic: AttachedServer) -> None:
    body = generic.adapt(small_workload().chat_body(model=generic.model_id))
    del body["stream_options"]  # a server that sends no usage
    with requests.Session() as session:
        sample = measure_stream(
            session, f"{generic.base_url}/v1/chat/completions", body, index=1, timeout_s=600, server_timings=False
        )
    assert sample.ok, sample.error
    assert sample.tokens_source == "chunks" and sample.prompt_tokens is None
    assert "tokens_counted_from_chunks" in sample.flags  # said with the sample the service stores
    assert (sample.tokens_generated == 8) == (sample.stop_reason == "length")
    assert sample.decode_tokens_per_s_server is None and sample.decode_tokens_per_s_client is not None


def test_a_context_sweep_is_skipped_with_the_reason(generic: AttachedServer) -> None:
    with requests.Session() as session:
        points, reason = run_sweep(
            generic,
            SweepConfig(enabled=True, depths=[256, 512]),
            small_workload(),
            monitor=PowerMonitor(),
            session=session,
        )
    assert reason == "" and [p.skipped for p in points] == [True, True]
    for point in points:
        assert point.note == (
            "skipped: a generic OpenAI-compatible server has no /tokenize; "
            "an exact N-token prompt needs the server's own tokenizer"
        )


def test_the_service_stores_the_run_of_a_generic_server_with_the_reasons(
    live_server: Any, transactional_db: None, gemma_server: Any, tmp_path: Path
) -> None:
    from runners.pipeline import run_job

    rig = Rig.objects.create(name="cpu-rig", cpu="test CPU")
    _, token = RigToken.issue(rig=rig, label="attach")
    spec = {
        "service": {"url": live_server.url, "token": token, "rig": "cpu-rig", "spool_dir": str(tmp_path / "spool")},
        "attach": {"url": gemma_server.base_url, "engine": "openai"},
        "workload": {"max_tokens": 8, "repetitions": 1, "warmup": 0},
        "sweep": {"enabled": True, "depths": [256]},
        "cache_dir": str(tmp_path / "cache"),
    }
    result = run_job(spec)
    assert result.status == "finished", result.failure_reason
    assert result.delivered == "posted", result.delivery_detail

    run = requests.get(f"{live_server.url}/api/runs/{result.run_uuid}/", timeout=10).json()
    assert run["stack"]["engine"] == "other"
    (sample,) = run["samples"]
    assert sample["decode_tokens_per_s_server"] is None and sample["decode_tokens_per_s_client"] > 0
    assert sample["draft_n"] is None and sample["prefill_tokens_per_s"] is None
    extra = run["extra"]
    assert extra["server_api"] == "openai"
    assert "decode t/s is the client's" in extra["server_unavailable"]["server_timings"]
    assert run["configuration"]["top_k"] is None and run["configuration"]["min_p"] is None
    assert run["configuration"]["ctx_size"] is None
    (point,) = run["sweep_points"]
    assert point["ctx_tokens"] == 256 and "no /tokenize" in point["note"] and point["decode_tokens_per_s"] is None

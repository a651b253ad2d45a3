"""vLLM's /metrics speculative-decoding counters, as the attach mode reads them."""

from __future__ import annotations

from runners.harness.measure import parse_spec_counters

VLLM_METRICS = """\
# HELP vllm:spec_decode_num_draft_tokens_total Number of draft tokens.
# TYPE vllm:spec_decode_num_draft_tokens_total counter
vllm:spec_decode_num_draft_tokens_total{engine="0",model_name="qwen"} 1707.0
vllm:spec_decode_num_accepted_tokens_total{engine="0",model_name="qwen"} 1430.0
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",position="0"} 600.0
vllm:num_requests_running{engine="0"} 0.0
"""


def test_it_reads_the_drafted_and_accepted_counters() -> None:
    assert parse_spec_counters(VLLM_METRICS) == (1707, 1430)


def test_it_sums_counters_over_engines() -> None:
    two = VLLM_METRICS + 'vllm:spec_decode_num_draft_tokens_total{engine="1"} 3.0\n'
    assert parse_spec_counters(two) == (1710, 1430)


def test_it_returns_none_without_spec_decode_metrics() -> None:
    assert parse_spec_counters('vllm:num_requests_running{engine="0"} 0.0\n') is None

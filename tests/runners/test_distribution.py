"""runners.distribution: percentiles and the figures of one concurrency level,
checked against the standard library's own quantiles (type 7, 'inclusive')."""

from __future__ import annotations

import statistics

import pytest

from runners.distribution import latency_percentiles, level_stats, percentile, percentile_figure, stream_time


@pytest.mark.parametrize("values", [[3.0, 1.0], [5.0, 1.0, 4.0, 2.0, 3.0], [float(i * i) for i in range(1, 38)]])
def test_percentiles_match_the_standard_librarys_inclusive_quantiles(values):
    cuts = statistics.quantiles(values, n=100, method="inclusive")
    for q in (50, 90, 99):
        assert percentile(values, q) == pytest.approx(cuts[q - 1])
    assert percentile(values, 0) == min(values) and percentile(values, 100) == max(values)


def test_a_percentile_of_fewer_than_two_values_is_empty_with_the_reason():
    figure = percentile_figure([12.0], 90, what="TTFT")
    assert figure.value is None
    assert figure.reason == "p90 of TTFT needs at least 2 values, got 1"
    assert percentile_figure([], 50, what="TTFT").reason.endswith("got 0")


def test_percentile_refuses_nonsense():
    with pytest.raises(ValueError, match="no values"):
        percentile([], 50)
    with pytest.raises(ValueError, match="within 0..100"):
        percentile([1.0, 2.0], 101)
    with pytest.raises(ValueError, match="finite"):
        percentile([1.0, float("nan")], 50)


def _request(index, started, ended, tokens, server_tps, ttft, itl, draft=(None, None), error=""):
    return {
        "index": index,
        "started_s": started,
        "ended_s": ended,
        "tokens_generated": tokens,
        "decode_tokens_per_s_server": server_tps,
        "decode_tokens_per_s_client": server_tps * 0.99 if server_tps else 7.0,
        "ttft_ms": ttft,
        "itl_ms": itl,
        "draft_n": draft[0],
        "draft_n_accepted": draft[1],
        "error": error,
    }


def test_level_stats_from_raw_requests():
    requests = [
        _request(1, 0.0, 2.0, 16, 10.0, 100.0, [50.0, 60.0], (10, 5)),
        _request(2, 0.0, 3.0, 16, 20.0, 200.0, [40.0], (10, 8)),
        _request(3, 2.0, 4.0, 8, None, 300.0, [70.0]),
        _request(4, 3.0, 3.5, 0, None, None, [], error="HTTP 503: busy"),
    ]
    s = level_stats(requests, energy_j=80.0)
    assert (s.n_ok, s.n_failed, s.output_tokens, s.span_s) == (3, 1, 40, 4.0)
    assert s.output_tokens_per_s == pytest.approx(10.0) and s.requests_per_s == pytest.approx(0.75)
    # The server's figure where there is one, else the client's (request 3: 7.0).
    decode = [10.0, 20.0, 7.0]
    assert s.decode_tokens_per_s_mean == pytest.approx(statistics.fmean(decode))
    assert s.decode_tokens_per_s_p50 == pytest.approx(10.0)
    assert s.ttft_ms_p90 == pytest.approx(statistics.quantiles([100.0, 200.0, 300.0], n=100, method="inclusive")[89])
    assert s.itl_ms_p50 == pytest.approx(55.0)  # pooled: 40, 50, 60, 70
    assert s.acceptance_pct == pytest.approx(65.0)  # pooled 13 / 20
    assert s.energy_j_per_token == pytest.approx(2.0)
    assert s.reasons == {}


def test_level_stats_say_why_a_figure_is_empty():
    s = level_stats([_request(1, 0.0, 1.0, 4, 12.0, 90.0, [30.0])], energy_j=None, draft_n=None)
    assert s.output_tokens_per_s == pytest.approx(4.0)
    assert s.ttft_ms_p50 is None and "needs at least 2 values, got 1" in s.reasons["ttft_ms_p50"]
    assert s.itl_ms_p99 is None and "inter-token latency" in s.reasons["itl_ms_p99"]
    assert s.reasons["energy_j_per_token"] == "no energy reading (no NVML)"
    assert s.reasons["acceptance_pct"] == "nothing was drafted"
    # Level-wide draft counts (vLLM's /metrics) stand in when requests give none.
    assert level_stats([_request(1, 0, 1, 4, 12.0, 9.0, [])], draft_n=10, draft_n_accepted=4).acceptance_pct == 40.0


def test_latency_percentiles_of_single_stream_samples():
    samples = [{"ttft_ms": 100.0, "itl_ms": [10.0, 20.0]}, {"ttft_ms": 300.0, "itl_ms": [30.0]}]
    figures = latency_percentiles(samples)
    assert figures["ttft_ms_p50"].value == pytest.approx(200.0)
    assert figures["itl_ms_p50"].value == pytest.approx(20.0)
    assert latency_percentiles(samples[:1])["ttft_ms_p90"].value is None


def _sequential(start: float, ttft_ms: float, tokens: int, speed: float, **extra):
    # One request of a single stream: it waits ttft, then decodes its tokens at its speed.
    end = start + ttft_ms / 1000 + tokens / speed
    return {"started_s": start, "ended_s": end, "ttft_ms": ttft_ms, "tokens_generated": tokens,
            "decode_tokens_per_s_server": speed, **extra}  # fmt: skip


def test_a_single_streams_wall_time_splits_into_first_tokens_and_decoding():
    """One fast request (32 t/s) among slow ones (8 t/s): the per-stream mean of speeds
    is well above both the aggregate and the pooled decode speed, and the split says why."""
    fast = _sequential(0.0, 500, 64, 32.0)
    slow = _sequential(fast["ended_s"], 1500, 64, 8.0)
    slower = _sequential(slow["ended_s"], 2000, 64, 8.0)
    failed = {"started_s": slower["ended_s"], "ended_s": slower["ended_s"] + 1, "error": "boom"}
    split = stream_time([fast, slow, slower, failed])
    stats = level_stats([fast, slow, slower])

    assert split is not None and split.n_requests == 3 and split.output_tokens == 192
    assert split.first_token_s == pytest.approx(4.0)
    assert split.decode_s == pytest.approx(2 + 8 + 8)
    assert split.span_s == pytest.approx(22.0) == pytest.approx(split.first_token_s + split.decode_s)
    assert split.aggregate_tokens_per_s == pytest.approx(stats.output_tokens_per_s) == pytest.approx(192 / 22)
    assert split.pooled_decode_tokens_per_s == pytest.approx(192 / 18)
    assert stats.decode_tokens_per_s_mean == pytest.approx(48 / 3)  # the mean of 32, 8 and 8
    assert (split.slowest_tokens_per_s, split.fastest_tokens_per_s) == (8.0, 32.0)


def test_no_split_without_a_decode_speed_or_times():
    assert stream_time([]) is None
    assert stream_time([{**_sequential(0.0, 500, 64, 32.0), "decode_tokens_per_s_server": None}]) is None
    assert stream_time([{"error": "boom"}]) is None

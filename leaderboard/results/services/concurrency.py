"""Concurrency levels: store a run's levels with their raw requests and the
statistics computed from them (runners.distribution, the runner's own module).

Input dicts are already validated by the API serializers; a level already
stored for the run (same concurrency) is skipped, so a retried close adds
nothing twice."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from leaderboard.results.models import ConcurrencyLevel, ConcurrencyRequest, Run
from leaderboard.results.speedups.prefetch import attach_prefetched
from runners.distribution import LevelStats, level_stats

_LEVEL_INPUT = ("concurrency", "n_requests", "wall_s", "energy_j", "power_w_mean", "draft_n", "draft_n_accepted")
_REQUEST_INPUT = (
    "index",
    "stream",
    "started_s",
    "ended_s",
    "ttft_ms",
    "decode_tokens_per_s_client",
    "decode_tokens_per_s_server",
    "prompt_tokens",
    "tokens_generated",
    "draft_n",
    "draft_n_accepted",
)
STATS_FIELDS = (
    "n_ok",
    "n_failed",
    "output_tokens",
    "output_tokens_per_s",
    "requests_per_s",
    "decode_tokens_per_s_mean",
    "decode_tokens_per_s_p50",
    "decode_tokens_per_s_p90",
    "decode_tokens_per_s_p99",
    "ttft_ms_p50",
    "ttft_ms_p90",
    "ttft_ms_p99",
    "itl_ms_p50",
    "itl_ms_p99",
    "acceptance_pct",
    "energy_j_per_token",
)


def level_stats_apply(*, level: ConcurrencyLevel, requests: Sequence[ConcurrencyRequest]) -> LevelStats:
    """Set ``level``'s computed columns from ``requests`` (not saved); return the stats."""
    stats = level_stats(
        requests,
        wall_s=level.wall_s,
        energy_j=level.energy_j,
        draft_n=level.draft_n,
        draft_n_accepted=level.draft_n_accepted,
    )
    for name in STATS_FIELDS:
        setattr(level, name, getattr(stats, name))
    level.stats_reasons = dict(stats.reasons)
    return stats


def concurrency_levels_create(*, run: Run, levels: Sequence[Mapping[str, Any]]) -> list[ConcurrencyLevel]:
    """Store ``levels`` (with their requests) for ``run``, skipping levels it already has;
    return the levels stored now. Call inside the caller's transaction."""
    if not levels:
        return []
    stored = set(ConcurrencyLevel.objects.filter(run=run).values_list("concurrency", flat=True))
    created: list[ConcurrencyLevel] = []
    by_level: list[list[ConcurrencyRequest]] = []
    for data in levels:
        if data["concurrency"] in stored:
            continue
        stored.add(data["concurrency"])
        level = ConcurrencyLevel(run=run, note=data.get("note") or "", **{k: data.get(k) for k in _LEVEL_INPUT})
        requests = [
            ConcurrencyRequest(
                level=level,
                itl_ms=list(r.get("itl_ms") or []),
                error=r.get("error") or "",
                **{k: r.get(k) for k in _REQUEST_INPUT},
            )
            for r in data.get("requests") or []
        ]
        level_stats_apply(level=level, requests=requests)
        created.append(level)
        by_level.append(requests)
    ConcurrencyLevel.objects.bulk_create(created)
    for level, requests in zip(created, by_level, strict=True):
        for request in requests:
            request.level = level  # sets level_id, now that the level has its id
    ConcurrencyRequest.objects.bulk_create([r for requests in by_level for r in requests])
    # The run's detail reads the requests right after: they are in hand.
    for level, requests in zip(created, by_level, strict=True):
        attach_prefetched(level, "requests", sorted(requests, key=lambda r: r.index))
    return created

"""Concurrency harness accuracy on the real llama-server with Gemma 3 270M (CPU): prints figures, not a test.

1. Per request, the harness's client decode t/s against the server's own
   ``predicted_per_second`` at 1, 2 and 4 concurrent streams: mean and max |Δ|
   (target ≤ 1%).
2. The harness's own CPU per streamed token at 8 streams: this process's CPU
   time over the level (every stream thread) per token, and as a share of one
   core at the level's token rate (target ≤ 2%).

    python benchmarks/concurrency_accuracy.py [--requests 8] [--max-tokens 128] [--spec-type none]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from gemma_server import gemma_server  # noqa: E402

from runners.config import WorkloadConfig  # noqa: E402
from runners.harness.concurrency import run_level  # noqa: E402
from runners.harness.power import PowerMonitor  # noqa: E402
from runners.harness.workload import Workload  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=8, help="requests per level (accuracy levels)")
    parser.add_argument("--cpu-requests", type=int, default=16, help="requests at the 8-stream CPU level")
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--spec-type", default="none", help="none, or draft-simple (Gemma drafts for itself)")
    args = parser.parse_args()

    workload = Workload.from_config(
        WorkloadConfig(max_tokens=args.max_tokens, repetitions=1, warmup=0, request_timeout_s=600)
    )
    with (
        gemma_server(ctx_size=8 * 1024, threads=args.threads, parallel=8, spec_type=args.spec_type) as server,
        PowerMonitor() as monitor,
    ):
        run_level(server, workload, concurrency=2, n_requests=2, monitor=monitor)  # warm up
        print("| streams | requests | mean |Δ| client vs server | max |Δ| | mean client t/s | mean server t/s |")
        print("|---|---|---|---|---|---|")
        worst = 0.0
        for streams in (1, 2, 4):
            level = run_level(server, workload, concurrency=streams, n_requests=args.requests, monitor=monitor)
            deltas, clients, servers = [], [], []
            for r in level.requests:
                client, served = r.sample.decode_tokens_per_s_client, r.sample.decode_tokens_per_s_server
                if client is None or served is None:
                    continue
                deltas.append(abs(100.0 * (client - served) / served))
                clients.append(client)
                servers.append(served)
            if not deltas:
                print(f"| {streams} | no request gave both figures: {level.note} |")
                return 1
            worst = max(worst, max(deltas))
            print(
                f"| {streams} | {len(deltas)} | {statistics.fmean(deltas):.3f}% | {max(deltas):.3f}% | "
                f"{statistics.fmean(clients):.2f} | {statistics.fmean(servers):.2f} |"
            )
        cpu_before = time.process_time()
        level = run_level(server, workload, concurrency=8, n_requests=args.cpu_requests, monitor=monitor)
        cpu_s = time.process_time() - cpu_before
    tokens = sum(r.sample.tokens_generated or 0 for r in level.requests if r.sample.ok)
    if not tokens or not level.wall_s:
        print(f"8-stream level produced no tokens: {level.note}")
        return 1
    rate = tokens / level.wall_s
    per_token_us = 1e6 * cpu_s / tokens
    print(
        f"\n8 streams, {len(level.requests)} requests, {tokens} tokens in {level.wall_s:.2f} s "
        f"({rate:.1f} t/s aggregate): harness CPU {1000 * cpu_s:.0f} ms = {per_token_us:.0f} µs per token, "
        f"{100 * cpu_s / level.wall_s:.2f}% of a core (target ≤ 2%)"
    )
    print(f"worst per-request |Δ| at 1, 2, 4 streams: {worst:.3f}% (target ≤ 1%)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

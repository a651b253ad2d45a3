"""Harness accuracy on the real llama-server with Gemma 3 270M (CPU): prints figures, not a test.

Per repetition: the harness's client-side decode t/s against the server's own
``predicted_per_second`` (target: within 1%), and the harness's own CPU time
over the decode as a share of one core (target: ≤ 2%).

    python benchmarks/harness_accuracy.py [--reps 10] [--max-tokens 256] [--spec-type draft-simple]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from gemma_server import gemma_server  # noqa: E402

from runners.config import WorkloadConfig  # noqa: E402
from runners.harness.power import PowerMonitor  # noqa: E402
from runners.harness.suite import run_suite  # noqa: E402
from runners.harness.workload import Workload  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--spec-type", default="draft-simple", help="draft-simple (Gemma drafts for itself) or none")
    args = parser.parse_args()

    workload = Workload.from_config(
        WorkloadConfig(max_tokens=args.max_tokens, repetitions=args.reps, warmup=1, request_timeout_s=600)
    )
    with (
        gemma_server(ctx_size=4096, threads=args.threads, parallel=1, spec_type=args.spec_type) as server,
        PowerMonitor() as monitor,
    ):
        result = run_suite(server, workload, monitor=monitor)
    if result.status != "finished":
        print(f"run failed: {result.failure_reason}")
        return 1

    print("| rep | tokens | client t/s | server t/s | client − server | decode s | harness CPU ms | CPU % of a core |")
    print("|---|---|---|---|---|---|---|---|")
    deltas, cpu_pcts = [], []
    for s in result.samples:
        client, server_tps = s.decode_tokens_per_s_client, s.decode_tokens_per_s_server
        if client is None or server_tps is None or not s.decode_s or s.decode_cpu_s is None:
            print(f"| {s.index} | incomplete sample: {s.flags} |")
            continue
        delta = 100.0 * (client - server_tps) / server_tps
        cpu_pct = 100.0 * s.decode_cpu_s / s.decode_s
        deltas.append(delta)
        cpu_pcts.append(cpu_pct)
        print(
            f"| {s.index} | {s.tokens_generated} | {client:.2f} | {server_tps:.2f} | {delta:+.3f}% | "
            f"{s.decode_s:.3f} | {1000 * s.decode_cpu_s:.1f} | {cpu_pct:.2f}% |"
        )
    if not deltas:
        return 1
    abs_deltas = [abs(d) for d in deltas]
    print(
        f"\nclient vs server decode t/s: mean |Δ| {statistics.fmean(abs_deltas):.3f}%, "
        f"max |Δ| {max(abs_deltas):.3f}% (target ≤ 1%) -> {'PASS' if max(abs_deltas) <= 1 else 'MISS'}"
    )
    print(
        f"harness CPU during decode: mean {statistics.fmean(cpu_pcts):.2f}%, max {max(cpu_pcts):.2f}% "
        f"of one core (target ≤ 2%) -> {'PASS' if max(cpu_pcts) <= 2 else 'MISS'}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

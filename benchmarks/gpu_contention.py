"""Issue 36's contention on a GPU rig, measured through the real NVML: interleaved
A/A blocks (runners/builds/ab_block.py, the rig's own code) on a fully offloaded
model while another process decodes on the same GPU, next to the same blocks
without it.

The other process is a third llama-server of the same model on the same GPU, kept
busy by a loop of long requests (a neighbour's inference, the contention a shared
GPU rig sees). The runner reads the others' SM utilisation and memory through NVML
around every repetition (runners/harness/contention.py ``Gpus``); the rule
(runners/ab_design.py ``contention_call``) must call the quiet blocks quiet and the
busy ones heavy, so the confirmation service would hold those back, not judge them.
Also prints the design the rig chose from its free VRAM (``design_for``).

    python benchmarks/gpu_contention.py --binary build/bin/llama-server --model m.gguf --n-gpu-layers 99 \\
        --blocks 2 --json "$OUT/gpu_contention.json"

Run on a lent GPU machine by benchmarks/device_gpu_ab.sh.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import requests

sys.path.insert(0, str(Path(__file__).resolve().parent))

from ab_confirmation import Bench  # noqa: E402

from runners.harness.server import LlamaServer  # noqa: E402

HOG_TOKENS = 512


@contextmanager
def gpu_neighbour(bench: Bench, binary: str, log_dir: Path) -> Iterator[dict[str, int]]:
    """Run a third server of the same model on the same GPU, decoding without pause
    for the duration; yield its counts (requests finished, failed)."""
    server = LlamaServer(replace(bench.server(binary), threads=1), log_dir=log_dir).start()
    counts, stop = {"requests": 0, "failed": 0}, threading.Event()

    def loop() -> None:
        with requests.Session() as session:
            while not stop.is_set():
                try:
                    r = session.post(f"{server.base_url}/completion", timeout=120,
                                     json={"prompt": "Once upon a time", "n_predict": HOG_TOKENS,
                                           "ignore_eos": True, "cache_prompt": False})  # fmt: skip
                    counts["requests" if r.ok else "failed"] += 1
                except requests.RequestException:
                    counts["failed"] += 1

    worker = threading.Thread(target=loop, daemon=True)
    worker.start()
    try:
        yield counts
    finally:
        stop.set()
        worker.join(timeout=130)
        server.stop()


def summary(block: dict[str, Any]) -> str:
    a, b = block["contention_a"] or {}, block["contention_b"] or {}
    return (f"contention {block['contention']}: others' GPU util A {a.get('gpu_others_util_pct')} % / "
            f"B {b.get('gpu_others_util_pct')} %, others' GPU memory A {a.get('gpu_others_mem_mib')} MiB / "
            f"B {b.get('gpu_others_mem_mib')} MiB, others' CPU share A {a.get('others_cpu_share')} / "
            f"B {b.get('others_cpu_share')}; error {block['error'] or '-'}")  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--binary", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--n-gpu-layers", type=int, default=99)
    parser.add_argument("--blocks", type=int, default=2, help="blocks quiet, then as many beside the neighbour")
    parser.add_argument("--reps-per-side", type=int, default=12)
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--json", help="write the blocks and readings here")
    args = parser.parse_args()
    result: dict[str, Any] = {"meta": {"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                                       **{k: v for k, v in vars(args).items() if k != "json"}},
                              "quiet": [], "neighbour": []}  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="rigboard-gpu-") as tmp:
        bench = Bench(args, Path(tmp))
        result["meta"] |= bench.design_meta(args.binary)
        design = result["meta"]["design_for"]
        print(f"NVML: {result['meta']['nvml']}; design: {design['design']} ({design['reason']})", flush=True)
        for i in range(args.blocks):
            result["quiet"].append(bench.block(args.binary, args.binary, i))
            print(f"quiet block {i}: {summary(result['quiet'][-1])}", flush=True)
        with gpu_neighbour(bench, args.binary, Path(tmp) / "neighbour") as counts:
            time.sleep(2.0)  # let its first request reach the GPU before the block's servers start
            for i in range(args.blocks):
                result["neighbour"].append(bench.block(args.binary, args.binary, i))
                print(f"beside a decoding neighbour, block {i}: {summary(result['neighbour'][-1])}", flush=True)
        result["meta"]["neighbour_requests"] = counts
        print(f"neighbour: {counts}", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1))
    calls = [b["contention"] for b in result["neighbour"]]
    return 0 if calls and all(c == "heavy" for c in calls) else 1


if __name__ == "__main__":
    sys.exit(main())

"""What RIGBOARD_SERVER_NICE buys a rig: a 1-thread llama-server (Gemma 3 270M, as
the nightly's reference configuration) measured alone, beside ``--hogs`` busy
loops at niceness 0 (a compile, a CPU hog), and beside them again started at
``--nice`` (runners/harness/server/process.py). Per arm: each run's median decode
t/s (server timings) over ``--reps`` requests of ``--tokens`` tokens, their
median, the share of the alone speed kept, and the run-to-run SD on the log
scale that the nightly's noise floor (5 × it) is made of (runners.stats.run_noise).

    python benchmarks/server_nice.py --hogs 3 --runs 4

Raising priority needs root, CAP_SYS_NICE or RLIMIT_NICE. Run it on a quiet
machine (load average < 1): the hogs are the only neighbour it means.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gemma_server import gemma_model, llama_server_binary  # noqa: E402

from runners import stats  # noqa: E402
from runners.config import ServerConfig  # noqa: E402
from runners.harness.server import LlamaServer  # noqa: E402

HOG = "while True: pass"


@dataclass(frozen=True)
class Arm:
    name: str
    hogs: int
    nice: int | None


def measure(arm: Arm, *, runs: int, reps: int, tokens: int) -> list[float]:
    """Return the arm's run medians (decode t/s), one fresh server for the arm."""
    if arm.nice is None:
        os.environ.pop("RIGBOARD_SERVER_NICE", None)
    else:
        os.environ["RIGBOARD_SERVER_NICE"] = str(arm.nice)
    config = ServerConfig(binary=llama_server_binary(), model=gemma_model(), ctx_size=2048, threads=1)
    server = LlamaServer(config, log_dir=tempfile.mkdtemp(prefix="rigboard-nice-")).start()
    hogs = [subprocess.Popen([sys.executable, "-c", HOG]) for _ in range(arm.hogs)]  # noqa: S603
    try:
        medians = []
        for run in range(runs):
            samples = []
            for rep in range(reps + 1):  # the first is a warm-up
                body = {
                    "messages": [{"role": "user", "content": f"Write poem number {run * 100 + rep}."}],
                    "max_tokens": tokens, "temperature": 0, "seed": 42,
                }  # fmt: skip
                answer = requests.post(f"{server.base_url}/v1/chat/completions", json=body, timeout=600)
                answer.raise_for_status()
                if rep:
                    samples.append(float(answer.json()["timings"]["predicted_per_second"]))
            medians.append(statistics.median(samples))
        return medians
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
        server.stop()
        os.environ.pop("RIGBOARD_SERVER_NICE", None)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hogs", type=int, default=3, help="busy loops at niceness 0 (default 3)")
    parser.add_argument("--nice", type=int, default=-10, help="the raised arm's niceness (default -10)")
    parser.add_argument("--runs", type=int, default=4, help="runs per arm (default 4)")
    parser.add_argument("--reps", type=int, default=6, help="requests per run after a warm-up (default 6)")
    parser.add_argument("--tokens", type=int, default=8, help="tokens per request (default 8)")
    args = parser.parse_args(argv)
    arms = [Arm("alone", 0, None), Arm(f"{args.hogs} hogs", args.hogs, None),
            Arm(f"{args.hogs} hogs, server at {args.nice}", args.hogs, args.nice)]  # fmt: skip
    print(f"cpus {os.cpu_count()}, load average {os.getloadavg()[0]:.2f} at start; 1 thread, "
          f"{args.runs} runs x {args.reps} requests x {args.tokens} tokens")  # fmt: skip
    alone = None
    for arm in arms:
        medians = measure(arm, runs=args.runs, reps=args.reps, tokens=args.tokens)
        median = statistics.median(medians)
        alone = alone or median
        noise = stats.run_noise(medians, k=stats.NOISE_K_ALERT)
        print(f"{arm.name:<28} median {median:6.1f} t/s  kept {100 * median / alone:5.1f}%  "
              f"run SD {noise.spread_pct:5.1f}% (log)  runs {' '.join(f'{m:.1f}' for m in medians)}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

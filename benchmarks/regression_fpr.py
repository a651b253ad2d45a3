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
    python benchmarks/regression_fpr.py --from-json benchmarks/results/regression_fpr_*.json  # sets, then totals
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gemma_server import gemma_model, llama_server_binary  # noqa: E402

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
from runners.stats import decode_tokens_per_s, rate_bounds_95  # noqa: E402

Runs = list[list[float]]
# Judges run j, its samples times a factor (1.0: as measured; 0.95: slowed 5%),
# against run i; returns the verdict's kind.
Judge = Callable[[float, int, int], Kind]
# (baseline i, new j, n, count) -> the runs whose medians give the noise floor.
History = Callable[[int, int, int, int], list[int]]


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
    if result.status != "finished":
        raise RuntimeError(f"run {index} {result.status}: {result.failure_reason}")
    samples = json.loads(out.read_text())["samples"]
    return [
        decode_tokens_per_s(server=s["decode_tokens_per_s_server"], client=s["decode_tokens_per_s_client"])
        for s in samples
    ]


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
    return lambda factor, i, j: judge(_scaled(runs[j], factor), runs[i], rule).kind


def _scaled(samples: list[float], factor: float) -> list[float]:
    return samples if factor == 1.0 else [v * factor for v in samples]


def _noise_cache(runs: Runs, rule: Rule, n: int, history: History) -> Callable[[int, int], Noise]:
    medians = [statistics.median(r) for r in runs]
    noises: dict[tuple[int, int], Noise] = {}

    def noise(i: int, j: int) -> Noise:
        if (i, j) not in noises:
            noises[(i, j)] = noise_from_medians([medians[h] for h in history(i, j, n, len(runs))], rule.noise_k)
        return noises[(i, j)]

    return noise


def new_judge(runs: Runs, rule: Rule, n: int, history: History = history_of) -> Judge:
    noise = _noise_cache(runs, rule, n, history)
    return lambda factor, i, j: judge(_scaled(runs[j], factor), runs[i], rule, noise(i, j)).kind


def confirmed_judge(runs: Runs, rule: Rule, n: int, history: History = history_of, reruns: int = 1) -> Judge:
    """The new rule with confirmation (leaderboard/regressions/services/confirmation.py):
    run j's change stands only if the ``reruns`` runs after it, judged against the
    same baseline with the same floor (and slowed by the same factor), show the
    same change. Use with confirmable_pairs."""
    noise = _noise_cache(runs, rule, n, history)

    def _judge(factor: float, i: int, j: int) -> Kind:
        first = judge(_scaled(runs[j], factor), runs[i], rule, noise(i, j)).kind
        if first == Kind.NONE:
            return first
        reruns_agree = all(
            judge(_scaled(runs[j + k], factor), runs[i], rule, noise(i, j)).kind == first for k in range(1, reruns + 1)
        )
        return first if reruns_agree else Kind.NONE

    return _judge


def confirmable_pairs(pairs: list[tuple[int, int]], count: int, reruns: int = 1) -> list[tuple[int, int]]:
    """The pairs whose new run j has ``reruns`` runs after it, none of them the baseline."""
    return [(i, j) for i, j in pairs if j + reruns < count and not j < i <= j + reruns]


# Detection is measured on at most this many pairs per order (a fixed random
# sample): 60 slowdowns x every pair of a 150-run set would take an hour.
DETECTION_PAIRS_MAX = 2000


def rates(runs: Runs, flagged: Judge, pairs: list[tuple[int, int]]) -> tuple[int, int, dict[float, float]]:
    """Return how many of ``pairs`` the rule calls a change (A/A false positives), how many of
    those it calls a regression, and the rate at which it calls an injected slowdown (%) a
    regression, the latter on at most DETECTION_PAIRS_MAX of the pairs."""
    kinds = [flagged(1.0, i, j) for i, j in pairs]
    changes, regressions = sum(k != Kind.NONE for k in kinds), sum(k == Kind.REGRESSION for k in kinds)
    sample = random.Random(0).sample(pairs, DETECTION_PAIRS_MAX) if len(pairs) > DETECTION_PAIRS_MAX else pairs
    detection = {}
    for d in [step / 2 for step in range(1, 41)] + [float(step) for step in range(21, 41)]:
        hits = sum(flagged(1 - d / 100, i, j) == Kind.REGRESSION for i, j in sample)
        detection[d] = hits / len(sample)
    return changes, regressions, detection


def upper_bound_95(flagged: int, trials: int) -> float:
    """Return the one-sided 95% Clopper-Pearson upper bound of a rate seen as flagged/trials
    (0 of n gives about 3/n, the rule of three)."""
    return rate_bounds_95(flagged, trials)[1]


def smallest(detection: dict[float, float], level: float) -> float | None:
    return next((d for d, rate in detection.items() if rate >= level), None)


def measure(args: argparse.Namespace) -> tuple[Runs, dict[str, Any]]:
    binary, model = args.binary or llama_server_binary(), gemma_model()
    runs: Runs = []
    load_before = os.getloadavg()[0]
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="rigboard-fpr-") as tmp:
        for index in range(args.runs):
            samples = one_run(binary, model, args.repetitions, args.max_tokens, Path(tmp), index, args.threads)
            runs.append(samples)
            if args.json:
                # Kept after every run: a long A/A set cut short still keeps what it measured.
                partial = {"runs": runs, "meta": {**_meta(args, started, load_before), "partial": True}}
                Path(args.json).write_text(json.dumps(partial, indent=1))
            print(f"run {index + 1:2d}/{args.runs}: median {statistics.median(samples):7.2f} t/s, "
                  f"CV {100 * statistics.stdev(samples) / statistics.fmean(samples):4.1f}%", flush=True)  # fmt: skip
    return runs, _meta(args, started, load_before)


def _meta(args: argparse.Namespace, started: float, load_before: float) -> dict[str, Any]:
    return {
        "repetitions": args.repetitions, "max_tokens": args.max_tokens, "threads": args.threads,
        "elapsed_s": round(time.monotonic() - started, 1), "cpus": os.cpu_count(),
        "load_before": load_before, "load_after": os.getloadavg()[0],
    }  # fmt: skip


@dataclass(frozen=True)
class Row:
    """One rule on one set of pairs: A/A pairs called a change, of those called a
    regression, the pairs, and the detection rate per injected slowdown (%)."""

    changes: int
    regressions: int
    pairs: int
    detection: dict[float, float]


# Per order, per rule.
Results = dict[str, dict[str, Row]]


def judge_set(
    runs: Runs, meta: dict[str, Any], rule: Rule, history_max: int, orders: tuple[str, ...] = ("all", "nightly")
) -> Results:
    """Print and return the A/A figures of one set of runs, in the given orders."""
    medians = [statistics.median(r) for r in runs]
    within_cv = statistics.fmean(100 * statistics.stdev(r) / statistics.fmean(r) for r in runs)
    between_cv = 100 * statistics.stdev(medians) / statistics.fmean(medians)
    histories = sorted({n for n in (MIN_NOISE_RUNS, 5, history_max) if MIN_NOISE_RUNS <= n <= len(runs) - 1})
    print()
    print(f"Gemma 3 270M Q4_K_M, {len(runs)} runs x {len(runs[0])} repetitions, {meta.get('max_tokens')} tokens, "
          f"{meta.get('elapsed_s')} s, {meta.get('cpus')} CPUs, load average {meta.get('load_before', 0):.1f} -> "
          f"{meta.get('load_after', 0):.1f}")  # fmt: skip
    print(f"decode t/s: run medians {min(medians):.2f}-{max(medians):.2f}, median {statistics.median(medians):.2f}; "
          f"within-run CV {within_cv:.2f}%; between-run CV of medians {between_cv:.2f}%; "
          f"alpha {rule.alpha}, threshold {rule.threshold_pct}%")  # fmt: skip
    results: Results = {}
    for order, pairs, history in (
        (ALL_PAIRS, all_pairs(len(runs)) if "all" in orders else [], history_of),
        (NIGHTLY, nightly_pairs(len(runs)) if "nightly" in orders else [], history_up_to),
    ):
        if not pairs:
            continue
        rules: dict[str, Judge] = {f"p + {rule.threshold_pct}% (old rule)": old_judge(runs, rule)}
        for n in histories:
            rules[f"+ noise floor {rule.noise_k:g} x SD of {n} runs"] = new_judge(runs, rule, n, history)
        results[order] = {}
        for name, flagged in rules.items():
            changes, regressions, detection = rates(runs, flagged, pairs)
            results[order][name] = Row(changes, regressions, len(pairs), detection)
        # The default rule with one confirmation re-run: the run after j (fewer pairs: j needs a successor).
        confirm_pairs = confirmable_pairs(pairs, len(runs))
        confirmed = confirmed_judge(runs, rule, history_max, history)
        changes, regressions, detection = rates(runs, confirmed, confirm_pairs)
        results[order][f"  + confirmed by 1 re-run ({history_max} runs)"] = Row(
            changes, regressions, len(confirm_pairs), detection
        )
        print_order(order, results[order])
    n = len(runs[0])
    print(f"(95% / 50% at: the smallest injected slowdown flagged in that share of pairs, {n} vs {n} samples; "
          f"bound: one-sided 95% upper bound of the A/A rate)")  # fmt: skip
    return results


ALL_PAIRS = "all ordered pairs (any baseline, history cyclic)"
NIGHTLY = "nightly order (run j vs run j-1, history up to j-1)"


def print_order(order: str, by_rule: dict[str, Row]) -> None:
    print()
    print(f"A/A pairs, {order}: {next(iter(by_rule.values())).pairs}")
    print(f"{'rule':<40} {'change':>7} {'bound':>7} {'regr.':>7} {'bound':>7} {'95% at':>7} {'50% at':>7}   "
          f"detection at 3/5/10/20/40% slowdown   (changes, regressions / pairs)")  # fmt: skip
    for name, row in by_rule.items():
        s95, s50 = smallest(row.detection, 0.95), smallest(row.detection, 0.5)
        curve = " ".join(f"{100 * row.detection[d]:5.1f}" for d in (3.0, 5.0, 10.0, 20.0, 40.0))
        rates_pct = " ".join(
            f"{100 * k / row.pairs:6.2f}% {100 * upper_bound_95(k, row.pairs):6.2f}%"
            for k in (row.changes, row.regressions)
        )
        counts = f"({row.changes}, {row.regressions} / {row.pairs})"
        print(f"{name:<40} {rates_pct} {s95 if s95 is not None else '>40':>6}% "
              f"{s50 if s50 is not None else '>40':>6}%   {curve}   {counts}")  # fmt: skip


def print_totals(all_results: list[Results]) -> None:
    """Print the A/A counts summed over sets (detection: the mean of the sets' rates)."""
    print()
    print(f"=== {len(all_results)} sets together ===")
    for order in (o for o in (ALL_PAIRS, NIGHTLY) if o in all_results[0]):
        names = [name for name in all_results[0][order] if all(name in r[order] for r in all_results)]
        totals = {}
        for name in names:
            rows = [r[order][name] for r in all_results]
            detection = {d: statistics.fmean(row.detection[d] for row in rows) for d in rows[0].detection}
            totals[name] = Row(
                sum(row.changes for row in rows), sum(row.regressions for row in rows),
                sum(row.pairs for row in rows), detection,
            )  # fmt: skip
        print_order(order, totals)


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
    parser.add_argument("--json", default="", help="also write the figures and raw samples here (after every run)")
    parser.add_argument("--from-json", nargs="+", default=[],
                        help="judge the raw runs saved by --json instead of measuring; several files: "
                             "each set judged alone, then the counts summed")  # fmt: skip
    parser.add_argument("--orders", choices=["all", "nightly", "both"], default="both",
                        help="which pairings to judge (all ordered pairs take minutes on a 140-run set)")  # fmt: skip
    args = parser.parse_args()
    orders = ("all", "nightly") if args.orders == "both" else (args.orders,)
    rule = Rule(alpha=args.alpha, threshold_pct=args.threshold_pct, noise_k=args.noise_k)

    if args.from_json:
        sets = []
        for path in args.from_json:
            saved = json.loads(Path(path).read_text())
            sets.append((path, saved["runs"], saved.get("meta", {})))
    else:
        runs, meta = measure(args)
        sets = [(args.json or "measured", runs, meta)]
    all_results = []
    for label, runs, meta in sets:
        if len(runs) < MIN_NOISE_RUNS + 1:
            print(f"{label}: need at least {MIN_NOISE_RUNS + 1} runs for a noise floor, got {len(runs)}",
                  file=sys.stderr)  # fmt: skip
            return 2
        print(f"\n--- {label} ---")
        all_results.append(judge_set(runs, meta, rule, args.history, orders))
    if len(all_results) > 1:
        print_totals(all_results)
    if args.json and not args.from_json:
        runs, meta = sets[0][1], sets[0][2]
        medians = [statistics.median(r) for r in runs]
        Path(args.json).write_text(json.dumps({
            "runs": runs, "meta": meta,
            "within_run_cv_pct": statistics.fmean(100 * statistics.stdev(r) / statistics.fmean(r) for r in runs),
            "between_run_cv_pct": 100 * statistics.stdev(medians) / statistics.fmean(medians),
            "rule": {"alpha": rule.alpha, "threshold_pct": rule.threshold_pct, "noise_k": rule.noise_k},
            "results": {order: {name: {"changes": row.changes, "regressions": row.regressions, "pairs": row.pairs,
                                       "fpr": row.changes / row.pairs,
                                       "upper_bound_95": upper_bound_95(row.changes, row.pairs),
                                       "regression_fpr": row.regressions / row.pairs,
                                       "regression_upper_bound_95": upper_bound_95(row.regressions, row.pairs),
                                       "detection_rate": row.detection,
                                       "smallest_slowdown_95_pct": smallest(row.detection, 0.95),
                                       "smallest_slowdown_50_pct": smallest(row.detection, 0.5)}
                                for name, row in by_rule.items()}
                        for order, by_rule in all_results[0].items()},
        }, indent=1))  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

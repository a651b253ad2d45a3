"""Search efficiency and trial overhead of tuning campaigns, on Gemma 3 270M (CPU).

``--measure`` runs the full grid once with the runner's own trial
(``runners.campaign.trial.measure_trial``: llama-server start, model load,
warmup, repetitions) and saves the raw trials to benchmarks/results/. The
replay then runs each strategy (grid, random, adaptive) over 20 seeds against
the saved grid: a strategy may only "measure" grid points, whose values come
from the saved trials, and the figure is the number of trials until one is
within 5% of the grid's best. Target: adaptive median <= 1/3 of the grid size.
Trial overhead: seconds per trial beyond the requests themselves (server start,
model load, delivery). Target <= 10 s.

    python benchmarks/campaign_search.py --measure --binary PATH --model gemma.gguf
    python benchmarks/campaign_search.py            # replay the saved grid
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from runners.campaign.search import TrialResult, run_search  # noqa: E402
from runners.campaign.spec import CampaignSpec  # noqa: E402
from runners.campaign.trial import measure_trial  # noqa: E402

RESULTS = Path(__file__).with_name("results") / "campaign_grid_gemma.json"
SPACE = {
    "threads": [1, 2],
    "cache_type_k": ["f16", "q8_0"],
    "flash_attn": ["on", "off"],
    "spec_type": ["none", "ngram-simple", "draft-simple"],
}


def measure_grid(binary: str, model: str, repetitions: int, max_tokens: int) -> dict[str, Any]:
    spec = CampaignSpec.from_mapping(
        {"name": "grid", "strategy": "grid", "space": SPACE, "repetitions": repetitions, "seed": 0}
    )
    base = {
        "server": {"binary": binary, "model": model, "ctx_size": 2048, "parallel": 1, "draft_n_max": 8,
                   "startup_timeout_s": 120.0, "stop_grace_s": 5.0},
        "workload": {"max_tokens": max_tokens, "warmup": 0, "request_timeout_s": 300.0},
        "cache_dir": str(Path.home() / ".cache" / "rigboard-tests" / "campaign-cache"),
    }  # fmt: skip

    def measure(number: int, params: dict[str, Any], prune: Any) -> TrialResult:
        trial = measure_trial(base, spec, number, params)
        line = f"{number:3d} {trial.state:9s} {trial.value or 0:8.2f} t/s {trial.duration_s or 0:6.1f} s {params}"
        print(line, flush=True)
        return trial

    started = time.time()
    trials = run_search(spec, measure)
    data = {
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
        "model": Path(model).name,
        "space": SPACE,
        "repetitions": repetitions,
        "max_tokens": max_tokens,
        "trials": [t.payload() for t in trials],
    }
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(data, indent=1))
    return data


def replay(data: dict[str, Any], seeds: int, target_pct: float) -> None:
    values = {json.dumps(t["params"], sort_keys=True): t["value"] for t in data["trials"] if t["state"] == "complete"}
    best = max(values.values())
    size = len(data["trials"])
    print(f"grid: {size} points, {len(values)} complete, best {best:.2f} t/s; target within {target_pct:g}% of it")

    def lookup(number: int, params: dict[str, Any], prune: Any) -> TrialResult:
        value = values.get(json.dumps(params, sort_keys=True))
        state = "complete" if value is not None else "failed"
        return TrialResult(number=number, params=params, state=state, value=value)

    for strategy in ("grid", "random", "adaptive"):
        counts = []
        for seed in range(seeds):
            spec = CampaignSpec.from_mapping(
                {"name": "replay", "strategy": strategy, "space": data["space"], "seed": seed}
            )
            trials = run_search(spec, lookup)
            hit = next(
                (
                    i
                    for i, t in enumerate(trials, 1)
                    if t.value is not None and t.value >= best * (1 - target_pct / 100)
                ),
                len(trials),
            )
            counts.append(hit)
        print(
            f"{strategy:9s} trials to within {target_pct:g}%: median {statistics.median(counts):4.1f}, "
            f"mean {statistics.fmean(counts):4.1f}, max {max(counts):2d} (of {size}); "
            f"median/grid size = {statistics.median(counts) / size:.2f}"
        )
    overhead = [t["duration_s"] - t["measured_s"] for t in data["trials"] if t.get("measured_s") is not None]
    durations = [t["duration_s"] for t in data["trials"] if t.get("duration_s") is not None]
    if overhead:
        print(
            f"trial overhead beyond the requests: median {statistics.median(overhead):.1f} s, "
            f"max {max(overhead):.1f} s (trial median {statistics.median(durations):.1f} s, "
            "no warmup request)"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--measure", action="store_true", help="measure the grid (else replay the saved one)")
    parser.add_argument("--binary", default="llama-server")
    parser.add_argument("--model", help="the model file (Gemma 3 270M)")
    parser.add_argument("--repetitions", type=int, default=2)
    parser.add_argument("--max-tokens", type=int, default=32)
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--target-pct", type=float, default=5.0)
    args = parser.parse_args()
    if args.measure:
        if not args.model:
            parser.error("--measure needs --model")
        data = measure_grid(args.binary, args.model, args.repetitions, args.max_tokens)
    else:
        data = json.loads(RESULTS.read_text())
    replay(data, args.seeds, args.target_pct)
    return 0


if __name__ == "__main__":
    sys.exit(main())

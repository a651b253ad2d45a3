"""Ingest benchmark: concurrent rigs POST finished runs to Rigboard under gunicorn
on PostgreSQL; prints runs/s and p50/p95 latency, then how fast PostgreSQL itself
takes the same rows with COPY, for reference; then (``--bulk-runs``, 0 to skip)
the same kind of runs through ``POST /api/runs/bulk/`` in batches, and the three
rates side by side (the issue's target: bulk ≥ 1/5 of COPY's runs/s).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres python benchmarks/ingest.py

DATABASE_URL names the PostgreSQL server (any database on it); the benchmark
drops and recreates a database of its own (--db-name, rb_bench_ingest), migrates
it, registers a rig with a token, starts gunicorn on a free loopback port, and
runs --clients keep-alive HTTP clients for --warmup + --duration seconds. Each
run carries 10 samples and 8 context-sweep points (docs/api.md). Every 201 is
checked against the rows in the database afterwards. Loopback only.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runners, run as a script

from ingest_bulk import bulk_bodies, bulk_phase
from ingest_db import copy_reference, cpu_snapshot, cpu_used, drop_database, load_average, table_counts
from ingest_service import RIG_NAME, add_database_arguments, start_service

from runners.distribution import percentile  # noqa: E402 - the linear one the service and other benchmarks use

SAMPLES_PER_RUN = 10
SWEEP_POINTS_PER_RUN = 8
MAX_CLIENTS = 64
MAX_DURATION_S = 120.0


@dataclass
class Outcome:
    """One POST as a client saw it."""

    started_s: float
    latency_s: float
    status: int  # 0 when the connection failed
    error: str = ""


@dataclass
class ClientLog:
    outcomes: list[Outcome] = field(default_factory=list)


def run_body(rng: random.Random) -> bytes:
    """Return one finished run as JSON: 10 samples and 8 sweep points with plausible jitter."""
    decode = rng.uniform(80.0, 120.0)
    samples = []
    for index in range(1, SAMPLES_PER_RUN + 1):
        tps = decode * rng.uniform(0.97, 1.03)
        drafted = rng.randint(1200, 1700)
        samples.append(
            {
                "index": index,
                "decode_tokens_per_s_server": round(tps, 3),
                "decode_tokens_per_s_client": round(tps * 0.99, 3),
                "prefill_tokens_per_s": round(rng.uniform(1500, 2000), 2),
                "ttft_ms": round(rng.uniform(80, 120), 2),
                "prompt_tokens": 120,
                "tokens_generated": 2000,
                "draft_n": drafted,
                "draft_n_accepted": int(drafted * rng.uniform(0.7, 0.9)),
                "energy_j": round(rng.uniform(1100, 1300), 1),
                "power_w_mean": round(rng.uniform(140, 160), 1),
                "power_w_peak": round(rng.uniform(165, 180), 1),
                "vram_peak_mib": 21900,
                "stop_reason": "length",
                "output_ok": True,
                "flags": [],
            }
        )
    sweep = [
        {
            "ctx_tokens": ctx,
            "ctx_label": f"{ctx // 1024}K",
            "prefill_tokens_per_s": round(rng.uniform(500, 2000), 1),
            "decode_tokens_per_s": round(decode * (1 - 0.05 * step), 2),
            "ttft_ms": round(ctx / 1.5, 1),
            "power_w": round(rng.uniform(300, 350), 1),
            "energy_j": None,
            "tokens_per_kwh": round(rng.uniform(150000, 250000)),
            "note": "",
        }
        for step, ctx in enumerate(1024 * 2**i for i in range(SWEEP_POINTS_PER_RUN))
    ]
    payload = {
        "uuid": str(uuid.uuid4()),
        "rig": RIG_NAME,
        "status": "finished",
        "started_at": "2026-11-21T21:00:00Z",
        "finished_at": "2026-11-21T21:04:00Z",
        "stack": {"engine": "llama.cpp", "build": "b7000-ad27757", "build_flags": "-DGGML_CUDA=ON", "image": ""},
        "model_file": {
            "name": "Qwen3.6-35B-A3B-MTP",
            "repo": "unsloth/Qwen3.6-35B-A3B-MTP-GGUF",
            "architecture": "moe",
            "total_params_b": 35,
            "active_params_b": 3,
            "quantization": "UD-Q3_K_XL",
            "weight_format": "GGUF",
        },
        "configuration": {
            "ctx_size": 32768,
            "cache_type_k": "q4_0",
            "cache_type_v": "q4_0",
            "flash_attn": "on",
            "n_gpu_layers": 99,
            "speculative_type": "mtp",
            "draft_n_max": 3,
            "command_line": "llama-server -m model.gguf --spec-type draft-mtp",
        },
        "workload": {"name": "space-invaders-html", "version": "1", "max_tokens": 2000, "repetitions": 10},
        "fingerprint": {"gpus": [{"name": "RTX 3090", "vram_mib": 24576}], "cpu": "bench", "os": "Linux"},
        "samples": samples,
        "sweep_points": sweep,
    }
    return json.dumps(payload).encode()


def client_loop(port: int, token: str, seed: int, stop_at: float, log: ClientLog) -> None:
    """POST runs over one keep-alive connection until ``stop_at``; record every outcome."""
    rng = random.Random(seed)
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    headers = {"Authorization": f"Token {token}", "Content-Type": "application/json", "Accept": "application/json"}
    while time.perf_counter() < stop_at:
        body = run_body(rng)
        started = time.perf_counter()
        try:
            conn.request("POST", "/api/runs/", body=body, headers=headers)
            response = conn.getresponse()
            answer = response.read()
            outcome = Outcome(started, time.perf_counter() - started, response.status)
            if response.status != 201:
                outcome.error = answer[:300].decode(errors="replace")
            if response.will_close:
                conn.close()  # http.client reconnects on the next request
        except (OSError, http.client.HTTPException) as exc:
            outcome = Outcome(started, time.perf_counter() - started, 0, repr(exc))
            conn.close()
        log.outcomes.append(outcome)
    conn.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_database_arguments(parser, db_name="rb_bench_ingest")
    parser.add_argument("--broker-url", default="", help="Celery broker for the service; default: tasks in-process")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--duration", type=float, default=15.0, help="measured seconds")
    parser.add_argument("--warmup", type=float, default=3.0)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--worker-class", default="gthread", choices=["sync", "gthread"])
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument(
        "--gunicorn-arg", action="append", default=[], help="extra gunicorn option, e.g. --gunicorn-arg=--config=x.py"
    )
    parser.add_argument("--bulk-runs", type=int, default=5000, help="runs posted through /api/runs/bulk/; 0 skips")
    parser.add_argument("--bulk-batch", type=int, default=500, help="runs per bulk request (≤ RIGBOARD_MAX_BULK_RUNS)")
    parser.add_argument("--bulk-clients", type=int, default=2)
    parser.add_argument("--keep-db", action="store_true", help="leave the benchmark database for inspection")
    args = parser.parse_args()
    if not 1 <= args.clients <= MAX_CLIENTS or not 0 < args.duration <= MAX_DURATION_S:
        parser.error(f"--clients must be 1..{MAX_CLIENTS} and --duration 0..{MAX_DURATION_S:.0f} s")

    service = start_service(
        args.database_url,
        args.db_name,
        broker_url=args.broker_url,
        workers=args.workers,
        worker_class=args.worker_class,
        threads=args.threads,
        gunicorn_args=args.gunicorn_arg,
    )
    bench_url = service.database_url
    load_before = load_average()
    try:
        logs = [ClientLog() for _ in range(args.clients)]
        cpu_before = cpu_snapshot(service.process.pid, bench_url, args.db_name)
        client_cpu_before = time.process_time()
        began = time.perf_counter()
        measure_from, stop_at = began + args.warmup, began + args.warmup + args.duration
        threads = [
            threading.Thread(target=client_loop, args=(service.port, service.token, seed, stop_at, log), daemon=True)
            for seed, log in enumerate(logs)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=args.warmup + args.duration + 60)
        client_cpu = time.process_time() - client_cpu_before
        used = cpu_used(cpu_before, cpu_snapshot(service.process.pid, bench_url, args.db_name))
        bulk = None
        if args.bulk_runs > 0:
            bodies = bulk_bodies(run_body, args.bulk_runs, args.bulk_batch, seed=len(logs))
            bulk = bulk_phase(service.port, service.token, bodies, args.bulk_clients)
    finally:
        service.stop()

    everything = [o for log in logs for o in log.outcomes]
    window = [o for o in everything if o.started_s >= measure_from and o.started_s + o.latency_s <= stop_at]
    created = [o for o in window if o.status == 201]
    failures = [o for o in everything if o.status != 201]
    counts = table_counts(bench_url)
    stored = sum(o.status == 201 for o in everything)
    print(
        f"gunicorn {args.workers} {args.worker_class} workers x {args.threads} threads, {args.clients} clients, "
        f"{os.cpu_count()} CPUs; {SAMPLES_PER_RUN} samples + {SWEEP_POINTS_PER_RUN} sweep points per run"
    )
    if created:
        latencies_ms = [o.latency_s * 1000 for o in created]
        print(
            f"ingest: {len(created)} runs in {args.duration:.1f} s = {len(created) / args.duration:.1f} runs/s; "
            f"latency p50 {percentile(latencies_ms, 50):.1f} ms, p95 {percentile(latencies_ms, 95):.1f} ms, "
            f"max {max(latencies_ms):.1f} ms"
        )
    if stored:
        service_ms, postgres_ms = (1000 * used[side] / stored for side in ("service", "postgres"))
        print(
            f"CPU per run: gunicorn {service_ms:.1f} ms + PostgreSQL {postgres_ms:.1f} ms "
            f"(clients {1000 * client_cpu / stored:.1f} ms) -> ceiling on {os.cpu_count()} idle CPUs: "
            f"{1000 * (os.cpu_count() or 1) / (service_ms + postgres_ms):.0f} runs/s; "
            f"load average before {load_before}, after {load_average()}"
        )
    if bulk is not None:
        latencies_ms = [s * 1000 for s in bulk.batch_latencies_s] or [0.0]
        print(
            f"bulk: {bulk.created} runs in {bulk.wall_s:.2f} s = {bulk.runs_per_s:.1f} runs/s "
            f"({args.bulk_clients} clients, batches of {args.bulk_batch}; batch latency "
            f"p50 {percentile(latencies_ms, 50):.0f} ms, max {max(latencies_ms):.0f} ms)"
        )
        stored += bulk.created
    expected = {"results_run": stored, "results_sample": stored * SAMPLES_PER_RUN}
    expected["results_sweeppoint"] = stored * SWEEP_POINTS_PER_RUN
    if counts != expected:
        print(f"MISMATCH: {stored} runs answered 201 but the database holds {counts}", file=sys.stderr)
    if stored:
        seconds = copy_reference(bench_url, stored)
        rows = stored * (1 + SAMPLES_PER_RUN + SWEEP_POINTS_PER_RUN)
        print(
            f"COPY reference: the same {stored} runs ({rows} rows) in {seconds * 1000:.0f} ms = "
            f"{stored / seconds:.0f} runs/s ({rows / seconds:.0f} rows/s)"
        )
        copy_rate = stored / seconds
        bulk_rate = bulk.runs_per_s if bulk is not None else float("nan")
        print(
            f"side by side, runs/s: single POST {len(created) / args.duration:.0f} | bulk POST {bulk_rate:.0f} | "
            f"COPY {copy_rate:.0f}; bulk / COPY = {bulk_rate / copy_rate:.2f} (target >= 0.20), "
            f"single / COPY = {len(created) / args.duration / copy_rate:.3f}"
        )
    if bulk is not None and (bulk.failures or bulk.created != args.bulk_runs):
        print(f"BULK FAILED: {bulk.created} of {args.bulk_runs} created; {bulk.failures[:3]}", file=sys.stderr)
    if failures:
        by_status: dict[int, int] = {}
        for o in failures:
            by_status[o.status] = by_status.get(o.status, 0) + 1
        print(f"FAILED requests by status: {by_status}; first: {failures[0].error}", file=sys.stderr)
    if not args.keep_db:
        drop_database(args.database_url, args.db_name)
    bulk_failed = bulk is not None and (bool(bulk.failures) or bulk.created != args.bulk_runs)
    return 1 if failures or bulk_failed or not created or counts != expected else 0


if __name__ == "__main__":
    sys.exit(main())

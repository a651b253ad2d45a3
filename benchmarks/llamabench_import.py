"""llama-bench import benchmark: rows/s through POST /api/llama-bench/ with a 500-row
file, beside the same rows POSTed one run at a time to /api/runs/ (one client), under
gunicorn on PostgreSQL. ``make bench-ingest`` gives the concurrent single-run rate.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres python benchmarks/llamabench_import.py

The rows are the real llama-bench rows of tests/fixtures/llama_bench/gemma-cpu.json,
each copy at another depth with its samples scaled (so each row is a new run). The
database (--db-name, rb_bench_llamabench) is dropped and recreated. Loopback only.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import sys
import time
from pathlib import Path

from ingest_db import cpu_snapshot, cpu_used, drop_database, load_average, table_counts
from ingest_service import RIG_NAME, add_database_arguments, start_service

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from runners import llamabench  # noqa: E402

FIXTURE = ROOT / "tests" / "fixtures" / "llama_bench" / "gemma-cpu.json"


def bench_file(rows: int, *, offset: int, seed: int) -> str:
    """Return a -o jsonl file of ``rows`` distinct rows derived from the real ones."""
    rng = random.Random(seed)
    base = json.loads(FIXTURE.read_text())
    lines = []
    for i in range(rows):
        row = dict(base[i % len(base)])
        row["n_depth"] = offset + i  # each row its own test @ depth: a new run
        row["samples_ts"] = [s * rng.uniform(0.9, 1.1) for s in row["samples_ts"]]
        row["avg_ts"] = sum(row["samples_ts"]) / len(row["samples_ts"])
        lines.append(json.dumps(row))
    return "\n".join(lines) + "\n"


def post(port: int, path: str, body: bytes, token: str, content_type: str) -> tuple[int, float, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    started = time.perf_counter()
    conn.request("POST", path, body=body, headers={"Authorization": f"Token {token}", "Content-Type": content_type})
    response = conn.getresponse()
    data = response.read()
    elapsed = time.perf_counter() - started
    conn.close()
    return response.status, elapsed, data


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_database_arguments(parser, db_name="rb_bench_llamabench")
    parser.add_argument("--rows", type=int, default=500)
    parser.add_argument("--files", type=int, default=3, help="files imported (each --rows new rows)")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()

    # An import outlasts the default 60 s connection age: its backend would close
    # at the end of the request and its CPU time be lost to the count below.
    service = start_service(
        args.database_url, args.db_name, extra_env={"DATABASE_CONN_MAX_AGE": "3600"}, workers=args.workers
    )
    database_url, token, port, pid = service.database_url, service.token, service.port, service.process.pid
    try:
        print(f"load average before: {load_average()}")
        file_rates = []
        cpu_before = cpu_snapshot(pid, database_url, args.db_name)
        for n in range(args.files):
            text = bench_file(args.rows, offset=1 + n * args.rows, seed=n)
            status, elapsed, data = post(port, "/api/llama-bench/", text.encode(), token, "text/plain")
            if status != 201 or json.loads(data)["created"] != args.rows:
                sys.exit(f"import answered {status}: {data[:500]!r}")
            file_rates.append(args.rows / elapsed)
            size_mb = len(text) / 1e6
            print(f"file {n + 1}: {args.rows} rows ({size_mb:.2f} MB) in {elapsed:.2f} s = {file_rates[-1]:.0f} rows/s")
        import_cpu = cpu_used(cpu_before, cpu_snapshot(pid, database_url, args.db_name))
        # The same kind of rows, one POST /api/runs/ each, one client.
        text = bench_file(args.rows, offset=1 + args.files * args.rows, seed=99)
        payloads = llamabench.row_payloads(llamabench.parse(text), rig=RIG_NAME)
        cpu_before = cpu_snapshot(pid, database_url, args.db_name)
        started = time.perf_counter()
        for payload in payloads:
            status, _, data = post(port, "/api/runs/", json.dumps(payload).encode(), token, "application/json")
            if status != 201:
                sys.exit(f"POST /api/runs/ answered {status}: {data[:500]!r}")
        single = len(payloads) / (time.perf_counter() - started)
        single_cpu = cpu_used(cpu_before, cpu_snapshot(pid, database_url, args.db_name))
        counts = table_counts(database_url)
        expected = (args.files + 1) * args.rows
        if counts.get("results_run") != expected:
            sys.exit(f"expected {expected} runs in the database, found {counts}")
        file_rates.sort()
        print(
            f"\nllama-bench import ({args.rows}-row files, {args.workers} gthread workers): "
            f"median {file_rates[len(file_rates) // 2]:.0f} rows/s (min {file_rates[0]:.0f}, max {file_rates[-1]:.0f})"
        )
        print(f"the same rows one POST /api/runs/ each (1 client, sequential): {single:.0f} runs/s")
        cores = os.cpu_count() or 1
        for label, used, rows in (
            ("import", import_cpu, args.files * args.rows),
            ("single POSTs", single_cpu, len(payloads)),
        ):
            service_ms, postgres_ms = (1000 * used[side] / rows for side in ("service", "postgres"))
            print(
                f"CPU per row, {label}: gunicorn {service_ms:.1f} ms + PostgreSQL {postgres_ms:.1f} ms "
                f"-> ceiling on {cores} idle CPUs: {1000 * cores / (service_ms + postgres_ms):.0f} rows/s"
            )
        print(f"database after: {counts}; load average after: {load_average()}")
        print("concurrent single-run POSTs: run `make bench-ingest` (8 clients) beside this figure")
    finally:
        service.stop()
        drop_database(args.database_url, args.db_name)
    return 0


if __name__ == "__main__":
    sys.exit(main())

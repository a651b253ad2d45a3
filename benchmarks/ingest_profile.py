"""In-process CPU cost of one POST /api/runs/ (the ingest benchmark's payload),
measured with Django's test client against PostgreSQL: a figure that does not
depend on how loaded the machine is, unlike the runs/s of benchmarks/ingest.py.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres python benchmarks/ingest_profile.py
    ... --profile 30      # also print the 30 costliest functions (cProfile, CPU time)
    ... --bulk-batch 500  # POST /api/runs/bulk/ in batches of 500 instead: CPU and wall ms per run

The script drops and recreates a database of its own (--db-name), migrates it,
registers the benchmark's rig, POSTs --warmup runs, then --runs runs, and prints
the median and mean CPU milliseconds per POST in this process (Django, DRF and
the PostgreSQL client; PostgreSQL's own CPU is not included) and the queries
each POST sends.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import random
import statistics
import sys
import time
from pathlib import Path

from ingest import run_body
from ingest_bulk import bulk_bodies
from ingest_db import drop_database, recreate_database, with_database
from ingest_service import RIG_NAME, add_database_arguments, service_env

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_database_arguments(parser, db_name="rb_bench_ingest_profile")
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=30)
    parser.add_argument("--profile", type=int, default=0, metavar="N", help="print the N costliest functions")
    parser.add_argument(
        "--bulk-batch", type=int, default=0, metavar="N", help="POST the runs to /api/runs/bulk/ N at a time"
    )
    args = parser.parse_args()

    recreate_database(args.database_url, args.db_name)
    # ingest.py's service settings, in this process; Django's test client calls itself "testserver".
    env = service_env(with_database(args.database_url, args.db_name), broker_url="")
    os.environ.clear()
    os.environ.update(env, ALLOWED_HOSTS="testserver")
    sys.path.insert(0, str(ROOT))
    import warnings

    import django

    warnings.filterwarnings("ignore", message="No directory at")

    django.setup()
    from django.core.management import call_command
    from django.db import connection
    from django.test import Client

    from leaderboard.results.models import Rig, RigGpu, RigToken

    try:
        call_command("migrate", verbosity=0)
        rig = Rig.objects.create(name=RIG_NAME, cpu="benchmark", ram_gb=64, os="Linux")
        RigGpu.objects.create(rig=rig, model="RTX 3090", count=1, vram_gb=24, power_limit_w=350)
        raw = RigToken.issue(rig=rig, label="ingest profile")[1]
        client = Client(HTTP_AUTHORIZATION=f"Token {raw}")
        rng = random.Random(1)
        batch = args.bulk_batch or 1
        if args.bulk_batch:
            bodies = bulk_bodies(run_body, (args.warmup + args.runs) * batch, batch, seed=1)
        else:
            bodies = [run_body(rng) for _ in range(args.warmup + args.runs)]
        path, status = ("/api/runs/bulk/", 200) if args.bulk_batch else ("/api/runs/", 201)

        def post(body: bytes) -> None:
            response = client.post(path, body, content_type="application/json")
            if response.status_code not in (status, 201):
                sys.exit(f"POST answered {response.status_code}: {response.content[:500]!r}")

        for body in bodies[: args.warmup]:
            post(body)
        # CaptureQueriesContext loses them: the test client resets the query log per request.
        queries: list[str] = []

        def record(execute, sql, params, many, context):  # type: ignore[no-untyped-def]
            queries.append(sql)
            return execute(sql, params, many, context)

        with connection.execute_wrapper(record):
            post(bodies[args.warmup])
        cpu_ms: list[float] = []
        wall_ms: list[float] = []
        profiler = cProfile.Profile(time.process_time) if args.profile else None
        for body in bodies[args.warmup + 1 :]:
            started, wall_started = time.process_time(), time.perf_counter()
            if profiler:
                profiler.enable()
            post(body)
            if profiler:
                profiler.disable()
            cpu_ms.append(1000 * (time.process_time() - started) / batch)
            wall_ms.append(1000 * (time.perf_counter() - wall_started) / batch)
        print(
            f"POST {path} in-process CPU per run over {len(cpu_ms) * batch} runs ({batch} per POST): "
            f"median {statistics.median(cpu_ms):.2f} ms, mean {statistics.fmean(cpu_ms):.2f} ms; "
            f"wall per run (with PostgreSQL's time) median {statistics.median(wall_ms):.2f} ms; "
            f"{len(queries)} queries per POST" + (" (times include cProfile's overhead)" if profiler else "")
        )
        for query in queries:
            print("   ", query[:140])
        if profiler:
            pstats.Stats(profiler).sort_stats("cumulative").print_stats(args.profile)
    finally:
        connection.close()
        drop_database(args.database_url, args.db_name)
    return 0


if __name__ == "__main__":
    sys.exit(main())

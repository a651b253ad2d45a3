"""Server time of the site's pages against a big database (filled by
benchmarks/site_generate.py): prints p50 / p95 per page, not a test.

Requests go through Django's test Client in-process (URL routing, middleware,
selectors, templates, PostgreSQL), so the figure is the server's own time
without a network. Targets: leaderboard p95 ≤ 100 ms (the GPU and model-file
pages and /?best=1 are leaderboards too), run page p95 ≤ 50 ms, GET /api/runs/
p95 ≤ 100 ms.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/rb_bench python benchmarks/site_latency.py [--iterations 40]

``--json FILE`` keeps the figures (with each request's raw times) and ``--compare
FILE`` prints a kept run's p95 and SQL p50 beside each page's, e.g. the 1M-run
database beside the 100k one:

    python benchmarks/site_latency.py --json 100k.json          # on the 100k database
    python benchmarks/site_latency.py --compare 100k.json       # on the 1M database

The ``cpu/sql`` column is issue 40's ratio: the process's CPU per request (Django,
templates, serialization, psycopg) over the time its SQL took (p50 each); the target
is ≤ 1 on every page. The SQL is timed around each statement's execute at the clock's
resolution (``SqlClock``); the ``sql log`` column is what this script printed before
2026-12-06: the sum of DEBUG's query log, whose times are rounded to whole
milliseconds each (a 0.4 ms statement counts 0, a 0.6 ms one 1).
``--cold`` times each request with nothing kept from the last
(the leaderboard's menus and workload counts are kept until the data changes, so a
repeated request measures the warm page). ``--profile DIR`` then writes, for each page, a cProfile of
``--iterations`` requests (``DIR/<page>.prof``) and prints its ten costliest functions
by own time, so the CPU can be found at its cause.
"""

from __future__ import annotations

import argparse
import cProfile
import datetime
import io
import json
import os
import platform
import pstats
import re
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "leaderboard.settings")
# As before DEBUG defaulted to off (issue 11): the development settings these were measured with.
os.environ.setdefault("DEBUG", "true")
os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/rb_bench")

from runners.distribution import percentile  # noqa: E402

TARGETS_MS = {"leaderboard": 100.0, "run": 50.0, "api": 100.0}


def pages() -> list[tuple[str, str, str]]:
    """Return (name, target group, URL) for each page measured, picked from the data present."""
    from django.db.models import Count

    from leaderboard.results.models import Rig, RigGpu, Run, Source

    busiest_rig = Rig.objects.annotate(n=Count("runs")).order_by("-n").values_list("pk", "name").first()
    assert busiest_rig, "no rigs: run benchmarks/site_generate.py first"
    gpu = RigGpu.objects.values_list("model", flat=True).order_by("model").first()
    swept = Run.objects.filter(sweep_points__isnull=False).values_list("pk", flat=True).order_by("-pk").first()
    some = list(Run.objects.filter(n_samples__gt=0).order_by("-pk").values_list("pk", flat=True)[:4])
    model_file = Run.objects.filter(n_samples__gt=0).values_list("model_file_id", flat=True).order_by("-pk").first()
    swept_two = list(
        Run.objects.filter(sweep_points__isnull=False).values_list("pk", flat=True).order_by("-pk").distinct()[:2]
    )
    six = list(Run.objects.filter(n_samples__gt=0).order_by("-pk").values_list("pk", flat=True)[:6])
    source = Source.objects.values_list("pk", flat=True).order_by("pk").first()
    rig_id, rig_name = busiest_rig
    return [
        ("leaderboard (no filter)", "leaderboard", "/"),
        ("leaderboard page 200", "leaderboard", "/?page=200"),
        ("leaderboard gpu+spec filter", "leaderboard", f"/?gpu={gpu}&spec=mtp"),
        ("leaderboard rig filter, sort rig", "leaderboard", f"/?rig={rig_name}&sort=rig"),
        ("leaderboard model+quant+date", "leaderboard", "/?model=qwen3.6&quant=Q4_K_M&since=2025-07-01"),
        ("leaderboard sort $/MTok", "leaderboard", "/?sort=cost"),
        # The stored share of the memory-bandwidth bound (issue 38; manage.py refresh_bounds fills it).
        ("leaderboard sort of bound", "leaderboard", "/?sort=-bound"),
        # The shown date orders by an expression over two tables (issue 23): no index serves it.
        ("leaderboard sort date", "leaderboard", "/?sort=-date"),
        ("leaderboard csv export", "leaderboard", "/leaderboard.csv?spec=mtp"),
        # The name is the key --compare matches on, so it does not carry the database's size.
        ("rig page (the busiest rig)", "rig", f"/rigs/{rig_id}/"),
        ("run page (10 reps + sweep)", "run", f"/runs/{swept or some[0]}/"),
        ("compare 4 runs", "compare", "/compare/?runs=" + ",".join(str(i) for i in some)),
        ("compare 6 runs", "compare", "/compare/?runs=" + ",".join(str(i) for i in six)),
        ("sweeps 2 runs", "compare", "/sweeps/?runs=" + ",".join(str(i) for i in swept_two)),
        ("leaderboard best per configuration", "leaderboard", "/?best=1"),
        ("leaderboard with failed checks", "leaderboard", "/?failed=on"),
        ("leaderboard search", "leaderboard", "/?q=3090"),
        (f"GPU page ({gpu})", "leaderboard", f"/gpus/{gpu}/"),
        ("model-file page", "leaderboard", f"/models/{model_file}/"),
        *([("source page", "source", f"/published/sources/{source}/")] if source else []),
        ("GET /api/runs/", "api", "/api/runs/"),
    ]


class SqlClock:
    """An execute wrapper (``connection.execute_wrapper``) that adds up the wall time
    of every statement a request runs, each at ``perf_counter``'s resolution: DEBUG's
    query log keeps each time rounded to the millisecond, so a statement under half a
    millisecond counts as none."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.statements = 0

    def __call__(self, execute, sql, params, many, context):
        began = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            self.seconds += time.perf_counter() - began
            self.statements += 1

    def reset(self) -> None:
        self.seconds, self.statements = 0.0, 0


def cpu_model() -> str:
    """The machine's CPU as /proc/cpuinfo names it (the figures hold for one CPU kind)."""
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def fetch(client, url: str):
    """Return the answer to ``url`` read to its end: a streamed download (the CSV export)
    is timed whole, and its server-side cursor is closed before the next request (left
    open, it held the connection: the next request waited on it for ever)."""
    response = client.get(url)
    if response.streaming:
        for _chunk in response.streaming_content:
            pass
        response.close()
    return response


def timed_requests(client, url: str, iterations: int, *, cold: bool = False):
    """Return the wall, CPU and SQL milliseconds of each of ``iterations`` requests to
    ``url`` (SQL by ``SqlClock`` and, for the record, by DEBUG's rounded log), and the
    number of statements the last one ran."""
    from django.core.cache import cache
    from django.db import connection, reset_queries

    wall: list[float] = []
    cpu: list[float] = []
    sql: list[float] = []
    sql_log: list[float] = []
    clock = SqlClock()
    with connection.execute_wrapper(clock):
        for _ in range(iterations):
            if cold:
                cache.clear()
            reset_queries()
            clock.reset()
            began, began_cpu = time.perf_counter(), time.process_time()
            response = fetch(client, url)
            wall.append((time.perf_counter() - began) * 1000)
            # CPU time of this process (Django, templates, psycopg): what the
            # server spends whatever else the machine is running.
            cpu.append((time.process_time() - began_cpu) * 1000)
            assert response.status_code == 200, url
            sql.append(clock.seconds * 1000)
            sql_log.append(sum(float(q["time"]) for q in connection.queries) * 1000)
    return wall, cpu, sql, sql_log, clock.statements


def profile_page(client, name: str, url: str, iterations: int, folder: Path) -> None:
    """Write a cProfile of ``iterations`` requests to ``url`` and print its ten costliest functions.
    Timed in this process's CPU time, as the table's CPU column is: waiting on the
    database is not counted (cProfile's default clock counts it against psycopg)."""
    profiler = cProfile.Profile(time.process_time)
    profiler.enable()
    for _ in range(iterations):
        fetch(client, url)
    profiler.disable()
    folder.mkdir(parents=True, exist_ok=True)
    profiler.dump_stats(folder / (re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") + ".prof"))
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(10)
    print(f"--- {name}: own time per function over {iterations} requests")
    print("\n".join(line for line in out.getvalue().splitlines() if re.match(r"\s+\d", line)))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=40)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--json", type=Path, help="write the figures (and raw times) to this file")
    parser.add_argument("--compare", type=Path, help="a file written by --json: its figures beside these")
    parser.add_argument(
        "--cold", action="store_true", help="clear the kept values (core/datacache.py) before each request"
    )
    parser.add_argument("--profile", type=Path, help="write each page's cProfile here and print its top functions")
    parser.add_argument("--pages", nargs="*", help="only the pages whose name contains one of these texts")
    parser.add_argument(
        "--no-freeze",
        action="store_true",
        help="leave the start-up heap to the garbage collector (wsgi.py freezes it: leaderboard/core/heap.py)",
    )
    args = parser.parse_args()
    before = json.loads(args.compare.read_text(encoding="utf-8")) if args.compare else None

    import django

    django.setup()
    from leaderboard.core.heap import freeze_startup_heap

    # As served (leaderboard/wsgi.py): the start-up heap out of the full collections.
    frozen = 0 if args.no_freeze else freeze_startup_heap()
    from django.db import connection
    from django.test import Client

    client = Client(HTTP_HOST="localhost")
    from leaderboard.results.models import Run, Sample

    runs, samples = Run.objects.count(), Sample.objects.count()
    print(f"database {connection.settings_dict['NAME']}: {runs:,} runs, {samples:,} samples")
    load_before = os.getloadavg()[0]
    print(f"load average (1 min) before: {load_before:.1f} on {os.cpu_count()} CPUs ({cpu_model()})")
    print("each request cold (nothing kept between requests)" if args.cold else "requests warm (kept values reused)")
    print(f"start-up heap frozen: {frozen:,} objects (core/heap.py)" if frozen else "start-up heap not frozen")
    header = (
        f"{'page':40} {'p50 ms':>7} {'p95 ms':>7} {'max ms':>7} {'cpu p50':>7} {'sql p50':>7} {'cpu/sql':>7} "
        f"{'queries':>7} {'sql log':>7}"
    )
    if before is not None:
        size = f"{before['runs'] // 1000:,}k"
        print(f"beside: {args.compare} ({before['runs']:,} runs, {before['date']}, load {before['load_before']:.1f})")
        header += f" {'p95 ' + size:>9} {'sql ' + size:>9}"
    print(header + "  target")
    failed = False
    figures: dict[str, dict[str, object]] = {}
    chosen = [page for page in pages() if not args.pages or any(text in page[0] for text in args.pages)]
    for name, group, url in chosen:
        for _ in range(args.warmup):
            assert fetch(client, url).status_code == 200, url
        wall, cpu, sql, sql_log, queries = timed_requests(client, url, args.iterations, cold=args.cold)
        p50, p95 = statistics.median(wall), percentile(wall, 95)
        target = TARGETS_MS.get(group)
        verdict = "" if target is None else (f"≤ {target:.0f} ok" if p95 <= target else f"≤ {target:.0f} MISSED")
        failed |= target is not None and p95 > target
        ratio = statistics.median(cpu) / statistics.median(sql) if statistics.median(sql) else float("inf")
        line = (
            f"{name:40} {p50:7.1f} {p95:7.1f} {max(wall):7.1f} {statistics.median(cpu):7.1f} "
            f"{statistics.median(sql):7.1f} {ratio:7.2f} {queries:7d} {statistics.median(sql_log):7.1f}"
        )
        if before is not None:
            old = before["pages"].get(name)
            line += f" {old['p95_ms']:9.1f} {old['sql_p50_ms']:9.1f}" if old else f" {'-':>9} {'-':>9}"
        print(f"{line}  {verdict}")
        figures[name] = {
            "url": url,
            "group": group,
            "p50_ms": p50,
            "p95_ms": p95,
            "max_ms": max(wall),
            "cpu_p50_ms": statistics.median(cpu),
            "sql_p50_ms": statistics.median(sql),
            # Before 2026-12-06 sql_p50_ms was this: DEBUG's log, each statement's time rounded to the ms.
            "sql_log_p50_ms": statistics.median(sql_log),
            "cpu_over_sql": ratio,
            "queries": queries,
            "wall_ms": wall,
        }
    load_after = os.getloadavg()[0]
    print(f"load average (1 min) after: {load_after:.1f}")
    if args.profile:
        for name, _group, url in chosen:
            profile_page(client, name, url, args.iterations, args.profile)
    if args.json:
        document = {
            "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "runs": runs,
            "samples": samples,
            "cpus": os.cpu_count(),
            "cpu_model": cpu_model(),
            "iterations": args.iterations,
            "cold": args.cold,
            "frozen_objects": frozen,
            "load_before": load_before,
            "load_after": load_after,
            "pages": figures,
        }
        args.json.write_text(json.dumps(document, indent=1), encoding="utf-8")
        print(f"figures written to {args.json}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())

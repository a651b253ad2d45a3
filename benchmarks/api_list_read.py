"""GET /api/runs/'s read (``selectors.run_list_public``: the columns a list row shows)
against the full read (``run_list().public()``: every column, as the detail reads):
prints CPU and wall ms per page and their pairwise ratio, not a test.

The two alternate in one process, pair by pair, so a change in the machine's speed
falls on both; each reads the newest ``--rows`` public runs and represents them with
the list's compiled serializer, and the two pages' documents are checked equal.
``--log-tails N`` first gives the newest N runs an 80-line llama-server log tail of
the runner's kind (runners/harness/server/process.py; ~6 KB each): the generator
leaves every tail empty, which a real run's never is.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/rb_bench python benchmarks/api_list_read.py [--log-tails 2000]

The database is one benchmarks/site_generate.py filled.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "leaderboard.settings")
os.environ.setdefault("DEBUG", "true")

import django  # noqa: E402

django.setup()

from django.db import connection  # noqa: E402

from leaderboard.results import selectors  # noqa: E402
from leaderboard.results.api.serializers.outputs import RunListOutputSerializer, represent  # noqa: E402

_LOG_LINES = [
    "slot launch_slot_: id  0 | task {t} | processing task",
    "slot update_slots: id  0 | task {t} | new prompt, n_ctx_slot = 4096, n_keep = 0, n_prompt_tokens = {p}",
    "slot update_slots: id  0 | task {t} | prompt processing progress, n_past = {p}, n_tokens = {p}, progress = 1.0",
    "slot print_timing: id  0 | task {t} | prompt eval time = {ms:.2f} ms / {p} tokens ({tps:.2f} tokens per second)",
    "       eval time = {ms:.2f} ms / {n} tokens ({tps:.2f} tokens per second)",
    "      total time = {ms:.2f} ms / {n} tokens",
    "srv  update_slots: all slots are idle",
    "srv  log_server_r: request: POST /completion 127.0.0.1 200",
]


def log_tail(rng: random.Random, lines: int = 80) -> str:
    """Return a log tail of ``lines`` lines shaped like llama-server's."""
    return "\n".join(
        rng.choice(_LOG_LINES).format(
            t=rng.randint(1, 999),
            p=rng.randint(10, 4000),
            n=rng.randint(16, 512),
            ms=rng.uniform(1, 9999),
            tps=rng.uniform(1, 999),
        )
        for _ in range(lines)
    )


def give_log_tails(count: int) -> None:
    rng = random.Random(20261206)
    with connection.cursor() as cursor:
        cursor.execute("SELECT id FROM results_run ORDER BY created_at DESC LIMIT %s", [count])
        ids = [row[0] for row in cursor.fetchall()]
        cursor.executemany(
            "UPDATE results_run SET server_log_tail = %s WHERE id = %s", [(log_tail(rng), i) for i in ids]
        )
        cursor.execute("SELECT avg(length(server_log_tail)) FROM results_run WHERE server_log_tail <> ''")
        print(f"{len(ids)} newest runs given a log tail; mean {cursor.fetchone()[0]:.0f} characters")


def page(read: Any, rows: int) -> tuple[float, float, list[Any]]:
    """Return (CPU ms, wall ms, documents) of one page of ``rows`` runs."""
    cpu0, wall0 = time.process_time(), time.perf_counter()
    runs = list(read().order_by("-created_at")[:rows])
    documents = [represent(RunListOutputSerializer, run) for run in runs]
    return (time.process_time() - cpu0) * 1000, (time.perf_counter() - wall0) * 1000, documents


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[50, 200])
    parser.add_argument("--pairs", type=int, default=60)
    parser.add_argument("--log-tails", type=int, default=0, help="give the newest N runs a log tail first")
    args = parser.parse_args()
    if args.log_tails:
        give_log_tails(args.log_tails)
    print(f"load average (1 min) before: {os.getloadavg()[0]:.2f}")

    def full() -> Any:
        return selectors.run_list().public()

    for rows in args.rows:
        for _ in range(8):  # warm-up: connection, prepared plans, compiled serializers
            page(full, rows), page(selectors.run_list_public, rows)
        pairs = [(page(full, rows), page(selectors.run_list_public, rows)) for _ in range(args.pairs)]
        assert pairs[-1][0][2] == pairs[-1][1][2], "the list read's documents differ from the full read's"
        cpu_full = statistics.median(a[0] for a, _ in pairs)
        cpu_list = statistics.median(b[0] for _, b in pairs)
        wall_full = statistics.median(a[1] for a, _ in pairs)
        wall_list = statistics.median(b[1] for _, b in pairs)
        cpu_ratio = statistics.median(b[0] / a[0] for a, b in pairs)
        wall_ratio = statistics.median(b[1] / a[1] for a, b in pairs)
        print(
            f"{rows} rows, {args.pairs} pairs: full read CPU {cpu_full:.1f} wall {wall_full:.1f} ms | "
            f"list read CPU {cpu_list:.1f} wall {wall_list:.1f} ms | "
            f"list/full pair by pair: CPU {cpu_ratio:.3f}, wall {wall_ratio:.3f}"
        )
    print(f"load average (1 min) after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()

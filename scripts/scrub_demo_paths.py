"""Store the demo data without the recording machine's paths: every absolute path in
leaderboard/results/demo_data/ (a model under the home folder's cache, the checkout's
virtual environment, a temporary folder) becomes its file name, as
``runners.portable.portable_text`` renders it. A model file stays told apart by its
sha256, which the records keep. Ports are kept: they are part of what was recorded,
and the pages render them portable.

    python scripts/scrub_demo_paths.py            # rewrite the files in place
    python scripts/scrub_demo_paths.py --check    # exit 1 when a file still holds a path

JSON files are rewritten string by string (their layout kept: one space of indent, as
recorded); TOML files line by line. The nightly records' repository is a temporary
clone of the recording VM and is what identifies their subscription: kept, and shown
by name on the pages."""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from runners.portable import has_machine_path, portable_text  # noqa: E402

DEMO = ROOT / "leaderboard" / "results" / "demo_data"
# Keys whose value identifies a record elsewhere (the nightly subscription's repository).
KEPT_KEYS = {"repo_url"}


def _paths_only(text: str) -> str:
    return portable_text(text, ports=False)


def scrub(value: Any, key: str = "") -> Any:
    """Return ``value`` with every string's paths by file name (KEPT_KEYS left as they are)."""
    if key in KEPT_KEYS:
        return value
    if isinstance(value, str):
        return _paths_only(value)
    if isinstance(value, list):
        return [scrub(v) for v in value]
    if isinstance(value, dict):
        return {_paths_only(k): scrub(v, k) for k, v in value.items()}
    return value


def _json_text(text: str) -> str:
    """Return a JSON document's text with its paths by file name, the KEPT_KEYS' values as they are."""
    kept: list[str] = []

    def keep(match: re.Match[str]) -> str:
        kept.append(match.group(0))
        return f"\0KEPT{len(kept) - 1}\0"

    held = re.sub(r'"(?:' + "|".join(KEPT_KEYS) + r')"\s*:\s*"(?:[^"\\]|\\.)*"', keep, text)
    new = _paths_only(held)
    return re.sub(r"\0KEPT(\d+)\0", lambda m: kept[int(m.group(1))], new)


def scrubbed_files() -> dict[Path, str]:
    """Return each demo file whose text changes, with its new text: the text itself is
    rewritten, so its layout stays as recorded (a path never holds a quote or a
    backslash, so a JSON string's path ends where the string or its escape does),
    and a JSON file must then read as ``scrub`` of the document."""
    out = {}
    for path in sorted(DEMO.rglob("*")):
        if path.suffix not in (".json", ".toml") or not path.is_file():
            continue
        text = path.read_text(encoding="utf-8")
        if path.suffix == ".json":
            new = _json_text(text)
            if json.loads(new) != scrub(json.loads(text)):
                raise SystemExit(f"{path}: the text rewrite does not read as the scrubbed document")
        else:
            new = _paths_only(text)
        if new != text:
            out[path] = new
    return out


def paths_left() -> list[str]:
    """Return 'file: key' for every string in the demo data that still holds a machine path."""
    found = []

    def walk(value: Any, where: str, key: str = "") -> None:
        if key in KEPT_KEYS:
            return
        if isinstance(value, str) and has_machine_path(value, ports=False):
            found.append(where)
        elif isinstance(value, list):
            for i, v in enumerate(value):
                walk(v, f"{where}[{i}]")
        elif isinstance(value, dict):
            for k, v in value.items():
                if has_machine_path(k, ports=False):
                    found.append(f"{where} (key {k})")
                walk(v, f"{where}.{k}", k)

    for path in sorted(DEMO.rglob("*.json")):
        walk(json.loads(path.read_text(encoding="utf-8")), path.relative_to(DEMO).as_posix())
    for path in sorted(DEMO.rglob("*.toml")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if has_machine_path(line, ports=False):
                found.append(f"{path.relative_to(DEMO).as_posix()}:{number}")
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="only report the files that still hold a path")
    args = parser.parse_args()
    if args.check:
        left = paths_left()
        for where in left:
            print(where)
        return 1 if left else 0
    for path, text in scrubbed_files().items():
        path.write_text(text, encoding="utf-8")
        print(f"scrubbed {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Print a replay's figures as the Markdown table benchmarks/README.md keeps:
per release its build time (from the cache or not), benchmark time, the load
meanwhile, each reference configuration's median decode t/s over its judged
run's repetitions, and every verdict with its effect, p and A/B answer.

    python benchmarks/replay_summary.py benchmarks/results/replay-11434-12/replay.json

Reads only the replay's own JSON (rigboard-replay/1, written by
``manage.py replay_releases --json``): no database.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any


def _median_judged(release: dict[str, Any], reference: str) -> float | None:
    for run in release.get("runs") or []:
        if run.get("reference") == reference and run.get("role") == "judged" and run.get("decode_tokens_per_s"):
            return statistics.median(run["decode_tokens_per_s"])
    return None


def _verdict(v: dict[str, Any]) -> str:
    if v.get("effect_pct") is None:
        return "–"
    words = f"{v['kind']} {v['effect_pct']:+.1f}% (p {v['p_value']:.2g})"
    ab = v.get("ab") or {}
    if ab.get("n_pairs"):
        low, high = ab.get("ci_pct") or [None, None]
        ci = f" [{low:+.1f}, {high:+.1f}]" if low is not None and high is not None else ""
        unit = "blocks" if ab.get("blocks") and ab.get("design") == "interleaved" else "pairs"
        words += f"; A/B {ab['n_pairs']} {unit} {ab['effect_pct']:+.1f}%{ci}: {v.get('confirmation') or '–'}"
    return words


def table(document: dict[str, Any]) -> str:
    references = [r["name"] for r in document.get("references") or []]
    head = ["release", "build s", "bench s", "load 1 min", *[f"{r}: median t/s" for r in references]]
    head += [f"{r}: verdict" for r in references]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for release in document.get("releases") or []:
        build = release.get("build") or {}
        time_s = build.get("build_time_s")
        built = "–" if time_s is None else f"{time_s:.0f}" + (" (cache)" if build.get("cached") else "")
        bench = "–" if build.get("bench_time_s") is None else f"{build['bench_time_s']:.0f}"
        load = "–".join(f"{x:.1f}" for x in release.get("load_1m") or [] if x is not None)
        medians = [_median_judged(release, r) for r in references]
        verdicts = {v["reference"]: v for v in release.get("verdicts") or []}
        cells = [f"[b{release['release']}]({release['url']})", built, bench, load or "–"]
        cells += ["–" if m is None else f"{m:.2f}" for m in medians]
        cells += [_verdict(verdicts[r]) if r in verdicts else "–" for r in references]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("replay", type=Path, help="the replay's JSON (rigboard-replay/1)")
    args = parser.parse_args(argv)
    document = json.loads(args.replay.read_text())
    print(document.get("label", ""))
    print(table(document))
    return 0


if __name__ == "__main__":
    sys.exit(main())

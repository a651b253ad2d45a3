"""Print a replay's figures as the Markdown table benchmarks/README.md keeps:
per release its build time (from the cache or not), benchmark time, the load
meanwhile, each reference configuration's median decode t/s over its judged
run's repetitions, and every verdict with its effect, p and A/B answer.

    python benchmarks/replay_summary.py benchmarks/results/replay-11434-12/replay.json

A window replayed in segments (one per session or machine, each segment's first
release the last one of the segment before, so every step is judged on one
machine by its own A/B blocks) prints as one table, a segment column first:

    python benchmarks/replay_summary.py benchmarks/results/replay-10331-8/replay.json \
        benchmarks/results/replay-10362-5/replay.json

Reads only the replay's own JSON (rigboard-replay/1, written by
``manage.py replay_releases --json``): no database. With ``--diffs``, a column
says what each step changed on a CPU rig's decode path (benchmarks/release_diff.py,
from the releases' source distributions in the build cache, fetched if missing):
a change called where that path did not change is not upstream's doing.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from leaderboard.regressions.states import NOT_STANDING, Confirmation  # noqa: E402
from runners.builds.release_diff import by_area, changes, files_phrase, on_cpu_decode_path  # noqa: E402
from runners.builds.releases import ReleaseError, sdist_fetch  # noqa: E402
from runners.env import build_cache_dir  # noqa: E402

SETTLED = "done"  # a replay step's state once the chain has settled it (models_replay.ReplayStepState)
# A step's diff on a CPU rig's decode path, in a cell: (old, new) -> words.
Diff = Callable[[int, int], str]


def decode_path_diff(sdists: Path) -> Diff:
    """Return the ``--diffs`` column's cell maker, reading source distributions in ``sdists``."""

    def cell(old: int, new: int) -> str:
        try:
            found = changes(sdist_fetch(old, sdists), old, sdist_fetch(new, sdists), new)
        except ReleaseError as exc:
            return f"? ({exc})"
        on_path, files = on_cpu_decode_path(found), files_phrase(found)
        if not on_path:
            return f"none of {files}"
        return f"{len(on_path)} of {files}: " + ", ".join(by_area(on_path))

    return cell


def _median_judged(release: dict[str, Any], reference: str) -> float | None:
    for run in release.get("runs") or []:
        if run.get("reference") == reference and run.get("role") == "judged" and run.get("decode_tokens_per_s"):
            return statistics.median(run["decode_tokens_per_s"])
    return None


def _answer(v: dict[str, Any]) -> str:
    """The A/B answer in the site's words (its ``Confirmation`` label; words.py calls a step
    the first run called no change and the blocks agreed with "no change by A/B")."""
    confirmation = v.get("confirmation") or ""
    if confirmation == Confirmation.AB_CONFIRMED and v.get("kind") == "none":
        return "no change by A/B"
    if confirmation not in Confirmation.values:
        return confirmation or "–"
    label = Confirmation(confirmation).label
    return label[:1].lower() + label[1:]


def _verdict(v: dict[str, Any], since: int | None = None) -> str:
    if v.get("effect_pct") is None:
        return "–"
    words = f"{v['kind']} {v['effect_pct']:+.1f}% (p {v['p_value']:.2g})"
    if since is not None:
        words += f" against {v['window'][0]} (held since b{since} regressed)"
    ab = v.get("ab") or {}
    if ab.get("n_pairs"):
        low, high = ab.get("ci_pct") or [None, None]
        ci = f" [{low:+.1f}, {high:+.1f}]" if low is not None and high is not None else ""
        unit = "blocks" if ab.get("blocks") and ab.get("design") == "interleaved" else "pairs"
        words += f"; A/B {ab['n_pairs']} {unit} {ab['effect_pct']:+.1f}%{ci}: {_answer(v)}"
    return words


# (reference, the held baseline release) -> the release whose standing regression began it.
Began = dict[tuple[str, str], int]


def _held_since(v: dict[str, Any], release: int, began: Began) -> int | None:
    """Return the release whose standing regression began the hold on this verdict's
    baseline, when that is an earlier one (as the timeline's "baseline held": a regressed
    build is no one's baseline, so the steps after it are judged against the same last
    good release); None for the first, or for anything else. Records the first in ``began``."""
    window = v.get("window") or []
    if v.get("kind") != "regression" or v.get("confirmation") in NOT_STANDING or not window or not window[0]:
        return None
    first = began.setdefault((v["reference"], window[0]), release)
    return first if first != release else None


def settled(document: dict[str, Any]) -> list[dict[str, Any]]:
    """The segment's releases that settled (judged, confirmed and bisected): a replay
    stopped early (a session's end) leaves the rest pending, and is continued as the
    next segment from its last settled release."""
    return [r for r in document.get("releases") or [] if r.get("state", SETTLED) == SETTLED]


def _stopped(document: dict[str, Any]) -> str:
    """Words for a segment's releases that did not settle; empty if every one did."""
    done, every = settled(document), document.get("releases") or []
    left = [f"b{r['release']}" for r in every if r not in done]
    if not left:
        return ""
    after = f"stopped after b{done[-1]['release']}" if done else "stopped before its first release settled"
    return f" ({after}; not replayed: {', '.join(left)})"


def _reference_keys(document: dict[str, Any]) -> list[str]:
    return [r["name"] for r in document.get("references") or []]


def window_table(documents: list[dict[str, Any]], diff: Diff | None = None) -> str:
    """One row per release; with more than one segment, a segment column first and
    each later segment's first release (the baseline its steps start from, judged
    as the last step of the segment before) left out."""
    references = _reference_keys(documents[0])
    for document in documents[1:]:
        if _reference_keys(document) != references:
            raise SystemExit(f"the segments' reference configurations differ: {_reference_keys(document)}")
    segmented = len(documents) > 1
    head = ["segment"] if segmented else []
    head += ["release", "build s", "bench s", "load 1 min", *[f"{r}: median t/s" for r in references]]
    head += [f"{r}: verdict" for r in references]
    head += ["CPU decode path changed"] if diff else []
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    last_release = None
    began: Began = {}
    for number, document in enumerate(documents, start=1):
        done = settled(document)
        releases = done
        if last_release is not None and releases and releases[0]["release"] == last_release:
            releases = releases[1:]
        elif last_release is not None and releases:
            raise SystemExit(
                f"segment {number} starts at b{releases[0]['release']}, not at b{last_release} "
                "(the segment before's last release): the step between them is not judged"
            )
        rows = _rows(releases, references, last_release, diff, began)
        if done:
            last_release = done[-1]["release"]
        lines += [("| " + str(number) + " " if segmented else "") + row for row in rows]
    return "\n".join(lines)


def _rows(
    releases: list[dict[str, Any]], references: list[str], before: int | None, diff: Diff | None, began: Began
) -> list[str]:
    lines = []
    for release in releases:
        build = release.get("build") or {}
        time_s = build.get("build_time_s")
        built = "–" if time_s is None else f"{time_s:.0f}" + (" (cache)" if build.get("cached") else "")
        bench = "–" if build.get("bench_time_s") is None else f"{build['bench_time_s']:.0f}"
        load = "–".join(f"{x:.1f}" for x in release.get("load_1m") or [] if x is not None)
        medians = [_median_judged(release, r) for r in references]
        verdicts = {v["reference"]: v for v in release.get("verdicts") or []}
        cells = [f"[b{release['release']}]({release['url']})", built, bench, load or "–"]
        cells += ["–" if m is None else f"{m:.2f}" for m in medians]
        cells += [
            _verdict(verdicts[r], _held_since(verdicts[r], release["release"], began)) if r in verdicts else "–"
            for r in references
        ]
        if diff:
            cells.append("–" if before is None else diff(before, release["release"]))
        before = release["release"]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "replay", type=Path, nargs="+", help="the replay's JSON (rigboard-replay/1), or its segments in order"
    )
    parser.add_argument("--diffs", action="store_true", help="add what each step changed on a CPU rig's decode path")
    parser.add_argument("--sdists", type=Path, help="where the source distributions are (default: the build cache's)")
    args = parser.parse_args(argv)
    diff = decode_path_diff(args.sdists or build_cache_dir() / "sdists") if args.diffs else None
    documents = [json.loads(path.read_text()) for path in args.replay]
    for number, document in enumerate(documents, start=1):
        print((f"segment {number}: " if len(documents) > 1 else "") + document.get("label", "") + _stopped(document))
    print(window_table(documents, diff))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""How close the boards' rows come to their memory-bandwidth bound (issue 38), and how
honest the estimate's 80% interval is. Computation on stored rows, no timing: fine on
a loaded machine.

    DEBUG=true DATABASE_URL=… python benchmarks/bandwidth_bound.py

(after ``make demo-data``: the community sets, the articles, the demo runs). Prints
the share of the bound per GPU family and engine (median, IQR, n); every
non-speculative row past its bound (a data error); the speculative rows past it;
and, leaving each rig out in turn, the estimate's median absolute percentage error
and the share of held-out figures inside its 80% interval, per GPU family.

    python benchmarks/bandwidth_bound.py --rig rigboard-dev-vm-demo --read-gb-s 31.1

holds one rig's runs against a read bandwidth measured on it (benchmarks/memread.py's best
pass): what a CPU rig whose memory channels and speed nobody stated reaches of its bound.
A rig sends the same figure as ``fingerprint.memory.read_gb_s``."""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "leaderboard.settings")

import django  # noqa: E402

django.setup()

from leaderboard.results.hardware.estimate import leave_one_rig_out  # noqa: E402
from leaderboard.results.hardware.runs import run_bound  # noqa: E402
from leaderboard.results.hardware.selectors import bounds_for_ids, observation_of, public_bounds  # noqa: E402
from leaderboard.results.models import Run, RunStatus  # noqa: E402


def this_machine(rig: str, read_gb_s: float) -> None:
    """Print each finished run of ``rig`` against the bound at ``read_gb_s`` of system memory."""
    ids = Run.objects.filter(rig__name=rig, status=RunStatus.FINISHED, decode_tokens_per_s_mean__isnull=False)
    print(f"{rig}: runs held against a measured read bandwidth of {read_gb_s:.1f} GB/s")
    print(f"{'run':>6} {'threads':>7} {'spec':<6} {'decode t/s':>10} {'bound t/s':>9} {'MB/token':>8} {'share':>6}")
    for pk, rb in sorted(bounds_for_ids(ids.values_list("pk", flat=True)).items()):
        measured = {**rb.facts.memory_detected, "read_gb_s": read_gb_s, "read_method": "benchmarks/memread.py"}
        mine = run_bound(dataclasses.replace(rb.facts, memory_detected=measured))
        words = rb.facts.command_line.split()
        threads = words[words.index("--threads") + 1] if "--threads" in words[:-1] else "-"
        spec = rb.facts.speculative_type or "none"
        if mine.bound is None or mine.gauge is None:
            print(f"{pk:>6} {threads:>7} {spec:<6} {rb.facts.decode_tokens_per_s:>10.1f}  no bound: {mine.reason}")
            continue
        share = f"{mine.gauge.ratio:.0%}" + (" (spec.)" if mine.gauge.over_by_speculation else "")
        print(
            f"{pk:>6} {threads:>7} {spec:<6} {rb.facts.decode_tokens_per_s:>10.1f} {mine.bound.tokens_per_s:>9.1f} "
            f"{mine.bound.bytes_per_token / 1e6:>8.1f} {share:>6}"
        )


def _quartiles(values: list[float]) -> tuple[float, float, float]:
    if len(values) == 1:
        return values[0], values[0], values[0]
    q1, q2, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return q1, q2, q3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rig", help="hold this rig's runs against --read-gb-s instead")
    parser.add_argument("--read-gb-s", type=float, help="the rig's measured memory read bandwidth")
    args = parser.parse_args()
    if args.rig:
        if not args.read_gb_s:
            parser.error("--rig needs --read-gb-s")
        this_machine(args.rig, args.read_gb_s)
        return
    bounds = public_bounds(limit=100_000)
    with_bound = [
        rb
        for rb in bounds.values()
        if rb.bound is not None and rb.share is not None or (rb.gauge and rb.gauge.over_by_speculation)
    ]
    print(f"{len(bounds)} public runs with a decode figure; {len(with_bound)} with a bound")
    groups: dict[tuple[str, str], list[float]] = defaultdict(list)
    over, spec_over = [], []
    for rb in with_bound:
        gauge = rb.gauge
        assert gauge is not None
        if gauge.over_by_speculation:
            spec_over.append(rb)
        elif gauge.impossible:
            over.append(rb)
        elif not rb.facts.speculative:
            groups[(rb.gpu_family, rb.facts.engine)].append(gauge.ratio)
    print("\nShare of the bound per GPU family and engine (non-speculative rows at or under it)")
    print(f"{'family':<22} {'engine':<12} {'n':>4} {'median':>7} {'IQR':>13}")
    for (family, engine), shares in sorted(groups.items()):
        q1, q2, q3 = _quartiles(shares)
        print(f"{family:<22} {engine:<12} {len(shares):>4} {q2:>7.0%} {q1:>6.0%}–{q3:<6.0%}")
    print(f"\nRows past their bound without speculative decoding (data errors to look at): {len(over)}")
    for rb in over:
        assert rb.gauge is not None and rb.bound is not None
        figure = f"{rb.facts.decode_tokens_per_s:.1f} t/s, bound {rb.bound.tokens_per_s:.1f} ({rb.gauge.ratio:.0%})"
        print(f"  run {rb.facts.run_id}: {figure}; {rb.bound.read.basis}")
    print(f"Speculative rows past the single-token bound: {len(spec_over)}")
    for rb in spec_over:
        assert rb.gauge is not None and rb.bound is not None
        figure = f"{rb.facts.decode_tokens_per_s:.1f} t/s, bound {rb.bound.tokens_per_s:.1f}"
        per_token = f"≤ {rb.gauge.bytes_per_accepted_token / 1e9:.2f} GB per accepted token"
        print(f"  run {rb.facts.run_id} ({rb.facts.speculative_type}): {figure}; {per_token}")
    observations = [o for rb in bounds.values() if (o := observation_of(rb)) is not None]
    held = leave_one_rig_out(observations)
    print(f"\nLeave-one-rig-out estimate: {len(held)} of {len(observations)} rows estimable")
    print(f"{'family':<22} {'n':>4} {'MdAPE':>7} {'inside 80%':>11}")
    by_family: dict[str, list] = defaultdict(list)
    for h in held:
        by_family[h.observation.family].append(h)
    for family, rows in sorted(by_family.items()):
        mdape = statistics.median(h.abs_pct_error for h in rows)
        inside = sum(h.inside for h in rows) / len(rows)
        print(f"{family:<22} {len(rows):>4} {mdape:>6.1f}% {inside:>10.0%}")
    if held:
        mdape = statistics.median(h.abs_pct_error for h in held)
        print(f"{'all':<22} {len(held):>4} {mdape:>6.1f}% {sum(h.inside for h in held) / len(held):>10.0%}")


if __name__ == "__main__":
    main()

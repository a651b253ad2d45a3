"""This machine's memory read bandwidth, for the bound of its own CPU runs (issue 38).

    python benchmarks/memread.py [--mib 2048] [--repeats 10] [--threads N]

Reads a buffer far larger than the caches (2 GiB by default) with numpy's sum, which
streams it once per pass, in ``--threads`` threads over disjoint slices at once
(llama.cpp decodes on several threads; one core alone does not saturate DRAM).
Prints every pass's GB/s (1 GB = 1e9 bytes) and their median and best: the best is
the bandwidth the bound should use, the others say how loaded the machine was. Run it
on a quiet machine: a busy neighbour's traffic comes out of the same bandwidth."""

from __future__ import annotations

import argparse
import os
import statistics
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np


def one_pass(slices: list[np.ndarray], pool: ThreadPoolExecutor) -> float:
    """Return the seconds one read of every slice takes, the slices read at once."""
    start = time.perf_counter()
    # numpy releases the GIL inside sum: the threads read in parallel.
    list(pool.map(np.sum, slices))
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mib", type=int, default=2048, help="buffer size in MiB (well past the last-level cache)")
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()
    buffer = np.ones(args.mib * 1024 * 1024 // 8, dtype=np.float64)  # written once: every page is resident
    slices = np.array_split(buffer, args.threads)
    with ThreadPoolExecutor(max_workers=args.threads) as pool:
        one_pass(slices, pool)  # warm-up
        rates = [buffer.nbytes / one_pass(slices, pool) / 1e9 for _ in range(args.repeats)]
    print(f"{args.mib} MiB, {args.threads} threads, {args.repeats} passes: " + " ".join(f"{r:.1f}" for r in rates))
    print(f"median {statistics.median(rates):.1f} GB/s, best {max(rates):.1f} GB/s")


if __name__ == "__main__":
    main()

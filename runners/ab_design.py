"""Which A/B design a rig runs, and the order it measures in: pure, shared by the
rig (runners/builds/ab_block.py runs it) and the service (regressions/ab_blocks.py
judges it), so the order the rig measured in and the order the rule assumes are
one definition.

Two designs (leaderboard/regressions/ab_blocks.py says why and how each is judged):

- ``INTERLEAVED``: a *block* starts a baseline (A) and a candidate (B) server side
  by side (same flags, model file and cores) and alternates their repetitions
  A B B A A B B A … (``rep_order``), never decoding at the same time; every block
  has fresh server processes.
- ``RUN_ABBA``: today's run-level design, each run a fresh server of one build,
  runs in ABBA order (regressions/ab.py). The fallback where two servers do not
  fit in the rig's memory (``choose_design``).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

# Repetitions of each build in one interleaved block. Repetitions are cheap against a
# server's start (16 tokens decode in ~0.2 s where a start takes ~7 s on the quiet
# 2-core VM, benchmarks/README.md), and the block's figure averages their spread.
# Replaying the recorded A/A noise (benchmarks/ab_noise.py, a simulation): with
# 64-token repetitions 12 a side catch a 2% slowdown in 90% of confirmations (6: 77%,
# 24: 92%; run-level ABBA 59%), with 16-token ones 39% (their SD is 5.2% each).
DEFAULT_REPS_PER_SIDE = 12
# Headroom over two copies of the model: KV cache, compute buffers, the runner.
MEMORY_MARGIN_FRACTION = 0.25
MEMORY_MARGIN_MIN_BYTES = 512 * 1024 * 1024


class Side(StrEnum):
    A = "a"  # the baseline build
    B = "b"  # the candidate build


class AbDesign(StrEnum):
    INTERLEAVED = "interleaved"  # both servers resident, repetitions alternated, blocks replicated
    RUN_ABBA = "run_abba"  # one fresh server a run, runs in ABBA order (the fallback)


def rep_order(block_index: int, reps_per_side: int) -> list[Side]:
    """Return the order of one block's repetitions: ``reps_per_side`` units of two,
    A B then B A alternately (A B B A A B …), the first unit A B in even blocks and
    B A in odd ones. Every adjacent unit is one A and one B, so a linear drift
    cancels in the mean of the units' log ratios when ``reps_per_side`` is even,
    and each side follows the other as often as itself (carry-over balanced).
    Raise ValueError for fewer than one repetition a side."""
    if reps_per_side < 1:
        raise ValueError(f"reps_per_side must be at least 1, got {reps_per_side}")
    out: list[Side] = []
    for unit in range(reps_per_side):
        a_first = (unit + block_index) % 2 == 0
        out += [Side.A, Side.B] if a_first else [Side.B, Side.A]
    return out


@dataclass(frozen=True)
class DesignChoice:
    """The design a rig can run and why: the bytes two servers need against the
    bytes free where the model lives (RAM, or the GPU's VRAM when offloaded)."""

    design: AbDesign
    needed_bytes: int
    available_bytes: int | None
    reason: str


def needed_bytes(model_bytes: int) -> int:
    """Return the memory two resident servers of a ``model_bytes`` model need:
    two copies (a GPU copies the weights per process; on the CPU the page cache
    may share them, which this does not count on) plus a margin."""
    margin = max(MEMORY_MARGIN_MIN_BYTES, int(model_bytes * MEMORY_MARGIN_FRACTION))
    return 2 * model_bytes + margin


def choose_design(*, model_bytes: int, available_bytes: int | None) -> DesignChoice:
    """Return INTERLEAVED when two servers of the model fit in ``available_bytes``,
    else RUN_ABBA. An unknown model size or free memory (None, or a model size
    not positive) takes the fallback: the design that cannot run out of memory."""
    if model_bytes <= 0 or available_bytes is None:
        return DesignChoice(AbDesign.RUN_ABBA, 0, available_bytes, "model size or free memory unknown: run-level ABBA")
    need = needed_bytes(model_bytes)
    mib = 1024 * 1024
    if need <= available_bytes:
        reason = f"two servers need {need // mib} MiB, {available_bytes // mib} MiB free: interleaved"
        return DesignChoice(AbDesign.INTERLEAVED, need, available_bytes, reason)
    reason = f"two servers need {need // mib} MiB, only {available_bytes // mib} MiB free: run-level ABBA"
    return DesignChoice(AbDesign.RUN_ABBA, need, available_bytes, reason)


# Contention (runners/harness/contention.py measures it around every repetition).
# Others using a quarter of the machine's CPU time is a second busy process on a
# 4-core rig, or half a core on a 2-core one: enough to change how two builds
# compare (issue 36), so such a block is held back and tried again later.
HEAVY_CPU_SHARE = 0.25
# A and B more than a tenth of the machine apart: pairing cannot cancel a
# contention that differs between the sides; the verdict says so.
UNEVEN_CPU_SHARE = 0.10
# On a GPU, another process's SM utilisation (peak %) beyond this is heavy.
HEAVY_GPU_UTIL_PCT = 20.0
UNEVEN_GPU_UTIL_PCT = 10.0


class ContentionCall(StrEnum):
    QUIET = "quiet"  # judged as measured
    UNEVEN = "uneven"  # judged, and the verdict says A and B ran under different contention
    HEAVY = "heavy"  # not judged: held back and tried again
    UNKNOWN = "unknown"  # not measured (no /proc): judged, and said so


def contention_call(
    *,
    a_cpu_share: float | None,
    b_cpu_share: float | None,
    a_gpu_util_pct: float | None = None,
    b_gpu_util_pct: float | None = None,
    heavy_cpu_share: float = HEAVY_CPU_SHARE,
) -> ContentionCall:
    """Return what the others' use of the rig during A's and B's repetitions
    means for judging them: HEAVY if either side's beyond the heavy limits
    (``heavy_cpu_share``: the rig's own, RIGBOARD_AB_HEAVY_CPU_SHARE),
    UNEVEN if the sides differ by more than the uneven ones, UNKNOWN without a
    CPU figure for both, else QUIET."""
    gpu = [v for v in (a_gpu_util_pct, b_gpu_util_pct) if v is not None]
    cpu = [v for v in (a_cpu_share, b_cpu_share) if v is not None]
    if any(v > heavy_cpu_share for v in cpu) or any(v > HEAVY_GPU_UTIL_PCT for v in gpu):
        return ContentionCall.HEAVY
    if len(cpu) < 2:
        return ContentionCall.UNKNOWN
    if abs(cpu[0] - cpu[1]) > UNEVEN_CPU_SHARE or (len(gpu) == 2 and abs(gpu[0] - gpu[1]) > UNEVEN_GPU_UTIL_PCT):
        return ContentionCall.UNEVEN
    return ContentionCall.QUIET

"""The interleaved A/B rule, pure: blocks of alternated repetitions in, a decision
out. No Django here. The run-level ABBA rule (regressions/ab.py) stays the
fallback where two servers do not fit (runners/ab_design.py decides).

The design: a *block* is a fresh baseline server (A) and a fresh candidate server
(B), both resident, same flags, model file and cores, their repetitions
alternated A B B A A B … (``rep_order``) and never decoding at the same time.
Blocks are replicated with new processes each time. A repetition's log decode
rate is, for build s in block b at position t::

    y = mu_s + u_(b,s) + D(t) + e

with u the process effect (where a server's memory and threads landed: fixed for
the life of a process, fresh in every block), D the machine's drift over time,
and e the repetition's own noise. Measured on the recorded real A/A runs
(benchmarks/ab_noise.py ``components``: the within-run spread is e's; the
variogram of consecutive runs' mean log rate, extrapolated to lag 0, less e's
share, is u's; its rise up to 8 runs apart is D's), as SDs of the log rate:

    source (recorded)                     runs  e: a rep  u: a process  D: drift  run means' lag-1
    quiet 2-core VM, 16 tokens × 6         560    5.19%      0.00%        2.67%       0.74
    quiet 2-core VM, 64 tokens × 10         66    1.16%      0.85%        0.83%       0.92
    noisy spell 2 vCPU, 64 tokens × 10     270    5.80%      3.56%        6.57%       0.83
    16 cores, 14 streams, 16 tokens × 6    220    9.69%      2.07%        8.61%       0.59

(u is 0 on the first source within the estimate's error: its 16-token
repetitions are so noisy that their mean over 6 hides it.)

The model it is judged on: **the block is the unit**. Each block gives one
figure, the mean over its adjacent units (A,B or B,A) of ln(B/A), and the blocks'
figures are judged by the same group-sequential t-test as run-level pairs
(regressions/ab.py: O'Brien–Fleming spending by the Bonferroni bound, the
threshold, the equivalence stop). Why this model:

- It respects both levels. With A and B the same number of repetitions in every
  block, the REML test of the build effect in the mixed model with a random
  block and a random block × build interaction (the process effect) is exactly
  the one-sample t on the block figures, with blocks − 1 degrees of freedom:
  the process variance is in the blocks' spread, so it is sampled, never
  assumed away, and repetitions are not counted as independent units (they are
  not: 12 repetitions of one process share its u).
- It respects the order of measurement. D moves A and B alike inside a block,
  and in A B B A order a linear drift cancels exactly in the mean of the units
  (each unit's bias is +delta then -delta); what is left of drift inside a block
  of ~5 s is small against e. Across blocks D does not enter a block's figure at
  all, so the blocks' figures are close to independent and the t-test's
  independence assumption holds, which it does not for run-level pairs: there
  consecutive runs ~9 s apart carry a drift with lag-1 autocorrelation 0.74,
  and the ABBA positions of 16 runs can line up with a swing (the false
  improvements in benchmarks/README.md).
- Its variance is 2 var(u) + 2 var(e) / R a block with R repetitions a side,
  against 2 var(u) + 2 var(e) / R + var(D_t - D_t-1) for a run-level pair:
  repetitions are cheap (a server start is the cost), so R can be large.

Simulated on that recorded noise (benchmarks/ab_noise.py, replayed in blocks of
consecutive real runs; figures in benchmarks/README.md): run-level ABBA calls 1.2%
of A/A confirmations a change on the quiet 16-token VM and 2.0% on the 14-stream
machine, above its 1% design level; this rule 0 of 1000 on both quiet sources,
and with 12 repetitions of 64 tokens a side catches 90% of 2% slowdowns (59%).

The mean, not a median, of the units: the ABBA cancellation holds for the mean
only; a stalled repetition moves one unit, and a failed one (no sample) drops
its unit. The simulation (benchmarks/ab_noise.py, tests/regressions/
test_ab_blocks_rule.py) replays the recorded noise through both designs.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from leaderboard.regressions.ab import AbOutcome, Pair, Plan, ab_judge
from runners.ab_design import ContentionCall, Side

# The interleaved plan: looks at 4, 6, 8, 10, 12 blocks. A block costs about
# what a run-level pair does (two server starts), so a few more blocks than
# pairs buy the power at 2% (benchmarks/ab_noise.py). The level holds at any
# limit; the power does not travel between rigs, so the service sizes each
# confirmation's limit from its rig's own A/A block noise (ab_power.py).
DEFAULT_BLOCK_FIRST = 4
DEFAULT_BLOCK_STEP = 2
DEFAULT_BLOCK_MAX = 12


def block_plan(*, alpha: float = 0.01, threshold_pct: float = 3.0, max_blocks: int = DEFAULT_BLOCK_MAX) -> Plan:
    """Return the sequential plan for blocks (the same rule as pairs, its own counts)."""
    max_blocks = max(2, max_blocks)
    return Plan(
        alpha=alpha,
        threshold_pct=threshold_pct,
        first_pairs=min(DEFAULT_BLOCK_FIRST, max_blocks),
        step_pairs=DEFAULT_BLOCK_STEP,
        max_pairs=max_blocks,
    )


@dataclass(frozen=True)
class Block:
    """One interleaved block: the side of each repetition and its decode rate
    (None for a failed repetition), both in the order measured."""

    sides: tuple[Side, ...]
    samples: tuple[float | None, ...]

    def __post_init__(self) -> None:
        if len(self.sides) != len(self.samples):
            raise ValueError(f"{len(self.sides)} sides for {len(self.samples)} samples")

    def unit_log_ratios(self) -> list[float]:
        """Return ln(B/A) of each adjacent unit (positions 2j, 2j+1) that is one A
        and one B with both samples positive and finite, in order."""
        out = []
        for j in range(0, len(self.sides) - 1, 2):
            unit = dict(zip(self.sides[j : j + 2], self.samples[j : j + 2], strict=True))
            a, b = unit.get(Side.A), unit.get(Side.B)
            if a is None or b is None or not (a > 0 and b > 0 and math.isfinite(a) and math.isfinite(b)):
                continue
            out.append(math.log(b / a))
        return out

    def contrast(self) -> float | None:
        """Return the block's figure, the mean of its units' log ratios; None
        without a usable unit."""
        ratios = self.unit_log_ratios()
        return statistics.fmean(ratios) if ratios else None

    @property
    def a_first(self) -> bool:
        return bool(self.sides) and self.sides[0] == Side.A


def blocks_judge(blocks: Sequence[Block], plan: Plan | None = None) -> AbOutcome:
    """Return the sequential decision on these blocks (each one figure, its
    contrast; ab_judge's rule with blocks for pairs). A block without a usable
    unit counts as run but is dropped, as a failed pair is."""
    plan = plan or block_plan()
    pairs = [Pair(1.0, math.exp(c) if (c := b.contrast()) is not None else 0.0, b.a_first) for b in blocks]
    return ab_judge(pairs, plan, unit="blocks")


# The blocks as the rig reports them (runners/delivery/ab_schema.py's AbBlock, as JSON).
# Worst first: the call a confirmation shows is the worst of its judged blocks.
_CONTENTION_ORDER = [ContentionCall.HEAVY, ContentionCall.UNEVEN, ContentionCall.UNKNOWN, ContentionCall.QUIET]


def judged_blocks(blocks: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Return the reported blocks the rule judges: not under heavy contention, not failed."""
    return [b for b in blocks if b.get("contention") != ContentionCall.HEAVY and not b.get("error")]


def side_means(blocks: Sequence[Mapping[str, Any]], side: Side) -> list[float]:
    """Return each block's mean decode rate of ``side`` (blocks without a sample of it left out)."""
    out = []
    for b in blocks:
        values = [v for s, v in zip(b["sides"], b["decode_tokens_per_s"], strict=True) if s == side and v]
        if values:
            out.append(statistics.fmean(values))
    return out


def worst_contention(blocks: Sequence[Mapping[str, Any]]) -> str:
    """Return the worst contention call of ``blocks`` ("" for none)."""
    calls = {str(b.get("contention") or ContentionCall.UNKNOWN) for b in blocks}
    return next((c.value for c in _CONTENTION_ORDER if c in calls), "")


def planted_slowdown(blocks: Sequence[Mapping[str, Any]], pct: float) -> list[dict[str, Any]]:
    """Return ``blocks`` with every B repetition's rate cut by ``pct`` percent: a
    slowdown of known size planted in real measured noise (a power check: would
    the rule have caught it on these very blocks?)."""
    factor = 1.0 - pct / 100.0
    out = []
    for b in blocks:
        rates = [
            v * factor if s == Side.B and v else v for s, v in zip(b["sides"], b["decode_tokens_per_s"], strict=True)
        ]
        out.append({**b, "decode_tokens_per_s": rates})
    return out

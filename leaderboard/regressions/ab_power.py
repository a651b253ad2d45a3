"""How many A/B blocks a rig needs, from its own A/A noise. Pure: no Django here.

Why: the interleaved rule (ab_blocks.py) holds its false-alarm level on any rig,
but its power does not travel. A block's figure has the SD of the rig's noise
(2 var(u) + 2 var(e) / R, ab_blocks.py's docstring), and that SD differed by 3×
between two 2-core VMs of this project (benchmarks/README.md, eighteenth
session: 1.22% and 3.79%). At 12 blocks a 2% slowdown is about 5.7 standard
errors on the first and 1.8 on the second: caught 9 of 10 there, 2 of 6 here.
So the block limit is sized per rig, from the block SD its own A/A checks
measured, and a confirmation left inconclusive says what the rig can resolve
instead of a bare "inconclusive".

The power of a plan is approximated look by look: at a look with n blocks the
rule calls a slowdown when the t statistic of the block figures passes the
look's two-sided critical value *and* the mean is beyond the threshold, i.e.
(with the SD taken as known for the second condition) when

    T > max(t_(1 - alpha_k / 2, n - 1), threshold / (sd / sqrt n)),

T a noncentral t with n - 1 degrees of freedom and noncentrality
effect / (sd / sqrt n). The plan's power is taken as the best look's. Earlier
looks only add chances to call the change, and stopping early for "no change"
needs a 90% CI inside ±threshold, rare for an effect beyond it, so this is
close to a lower bound; tests/regressions/test_ab_power.py checks it against
the sequential rule simulated on normal blocks.

The limit is sized on the SD's upper one-sided 90% confidence limit, not on
the sample SD itself. Sized on the sample SD, a rig whose few A/A blocks came
out calm gets a limit that is too short: on a 2-core EPYC (benchmarks/README.md,
fortieth session) 12 blocks measured 2.0%, the sizing asked for 18 blocks, and
the 156 blocks of the ten 2% confirmations that followed pooled to 2.94%: 6 of
10 caught, not 8. With df degrees of freedom, df·s²/σ² is chi-square(df), so
the upper limit is s·sqrt(df / chi2_(0.10, df)): 1.40× s at 11 df (2.81% there,
which asks for 36 blocks; the 2.94% measured after needs 38), 1.14× at 60,
1.06× at 300. A rig with many A/A blocks loses almost nothing; one with few
is sized as if it may be noisier than it looked, and the factor falls as its
A/A checks add up.
"""

from __future__ import annotations

import functools
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from scipy import optimize, stats

from leaderboard.regressions.ab import Plan
from leaderboard.regressions.ab_blocks import DEFAULT_BLOCK_FIRST, DEFAULT_BLOCK_STEP, block_plan

# The slowdown a subscription's confirmations are sized to catch, by default
# (the "≥ 80% at 2%"): Subscription.resolve_pct.
DEFAULT_RESOLVE_PCT = 2.0
# The power a confirmation is sized for (the "≥ 80% at 2%").
TARGET_POWER = 0.8
# At most this many blocks in a noise-sized confirmation: ~40 × 20 s on a 2-core
# CPU rig, about 13 minutes per verdict and reference configuration.
BLOCK_LIMIT_CAP = 40
# Fewer blocks than this (pooled over the rig's A/A checks) and the SD is too
# uncertain to size on: the subscription's own limit stands.
MIN_NOISE_BLOCKS = 8
# A limit is sized on the block SD's upper one-sided limit of this confidence
# (the module docstring says why): BlockNoise.sizing_sd_pct.
SIZING_CONFIDENCE = 0.9


@dataclass(frozen=True)
class BlockNoise:
    """A rig's block noise: the pooled within-check sample SD of its A/A
    checks' block figures (ln(B/A) × 100, about a percent), with its degrees of
    freedom (blocks less one per check), from ``n_checks`` checks of ``n_blocks``."""

    sd_pct: float
    df: int
    n_checks: int
    n_blocks: int

    def sizing_sd_pct(self, confidence: float = SIZING_CONFIDENCE) -> float:
        """Return the SD a block limit is sized on: the upper one-sided
        ``confidence`` limit of this pooled sample SD (df·s²/σ² is chi-square
        with ``df`` degrees of freedom for normal blocks)."""
        return self.sd_pct * math.sqrt(self.df / float(stats.chi2.ppf(1.0 - confidence, self.df)))

    def sizing_words(self) -> str:
        """Return the SD the limit is sized on, in words."""
        return f"sized on {self.sizing_sd_pct():.2f}%, its upper {100 * SIZING_CONFIDENCE:g}% confidence limit"

    def describe(self, source: str = "A/A") -> str:
        """Return the SD in words, its blocks named as of ``source`` confirmations."""
        return (
            f"block SD {self.sd_pct:.2f}% (pooled sample SD of {self.n_blocks} blocks "
            f"from {self.n_checks} {source} checks)"
        )


def pooled_block_noise(checks: Sequence[Sequence[float]]) -> BlockNoise | None:
    """Return the pooled within-check SD of block figures (natural-log ratios),
    one sequence per A/A check; checks with fewer than two blocks add nothing.
    Within each check, about its own mean: an A/A is 0 by construction, but a
    check's mean also holds the share of its build's processes it drew, which
    the rule sees as noise between checks, not within one. None without any
    degree of freedom."""
    sum_sq, df, used, blocks = 0.0, 0, 0, 0
    for figures in checks:
        values = [v for v in figures if math.isfinite(v)]
        if len(values) < 2:
            continue
        mean = statistics.fmean(values)
        sum_sq += sum((v - mean) ** 2 for v in values)
        df += len(values) - 1
        used += 1
        blocks += len(values)
    if df == 0:
        return None
    return BlockNoise(sd_pct=100.0 * math.sqrt(sum_sq / df), df=df, n_checks=used, n_blocks=blocks)


def _log_size(pct: float) -> float:
    """Return a slowdown of ``pct`` percent as the magnitude of its log ratio."""
    return -math.log1p(-min(pct, 99.0) / 100.0)


def look_power(sd_pct: float, effect_pct: float, n_blocks: int, alpha_look: float, threshold_pct: float) -> float:
    """Return the chance that a look at ``n_blocks`` blocks, tested at
    ``alpha_look``, calls a slowdown of ``effect_pct`` percent a regression
    beyond ``threshold_pct`` on a rig whose block SD is ``sd_pct``."""
    if n_blocks < 2 or sd_pct <= 0:
        return 0.0
    se = sd_pct / 100.0 / math.sqrt(n_blocks)
    df = n_blocks - 1
    crit = max(float(stats.t.ppf(1 - alpha_look / 2, df)), _log_size(threshold_pct) / se)
    return float(stats.nct.sf(crit, df, _log_size(effect_pct) / se))


def plan_power(sd_pct: float, effect_pct: float, plan: Plan) -> float:
    """Return the approximate chance ``plan`` calls a slowdown of ``effect_pct``
    percent on a rig of block SD ``sd_pct`` (the best of its looks)."""
    return max(look_power(sd_pct, effect_pct, n, plan.alpha_at(n), plan.threshold_pct) for n in plan.looks())


def block_limits(cap: int = BLOCK_LIMIT_CAP) -> list[int]:
    """Return the block limits a sized plan may have: the interleaved plan's
    looks (4, 6, 8 …) up to ``cap``."""
    return list(range(DEFAULT_BLOCK_FIRST, cap + 1, DEFAULT_BLOCK_STEP))


# A search costs up to ~0.1 s of scipy (19 limits × their looks) and the rig page and the
# matrix size every rig on each view: the answers are kept (pure functions of their arguments).
@functools.lru_cache(maxsize=4096)
def blocks_needed(
    sd_pct: float,
    effect_pct: float,
    *,
    alpha: float,
    threshold_pct: float,
    power: float = TARGET_POWER,
    cap: int = BLOCK_LIMIT_CAP,
) -> int | None:
    """Return the smallest block limit whose plan catches a slowdown of
    ``effect_pct`` percent with ``power``, on a rig of block SD ``sd_pct``; None
    when even ``cap`` blocks do not."""
    for limit in block_limits(cap):
        plan = block_plan(alpha=alpha, threshold_pct=threshold_pct, max_blocks=limit)
        if plan_power(sd_pct, effect_pct, plan) >= power:
            return limit
    return None


@functools.lru_cache(maxsize=4096)
def resolvable_pct(sd_pct: float, plan: Plan, *, power: float = TARGET_POWER) -> float:
    """Return the smallest slowdown, in percent, that ``plan`` catches with
    ``power`` on a rig of block SD ``sd_pct`` (at most 99)."""

    def short(pct: float) -> float:
        return plan_power(sd_pct, pct, plan) - power

    low, high = plan.threshold_pct, 99.0
    if short(high) < 0:
        return high
    if short(low) >= 0:
        return low
    return float(optimize.brentq(short, low, high, xtol=1e-3))


@dataclass(frozen=True)
class BlockSizing:
    """A confirmation's block limit sized from a rig's noise: ``limit`` blocks;
    the ``noise`` it was sized on (None: too few A/A blocks, the floor stands);
    the slowdown it is sized to catch (``resolve_pct``, 0 for none) and the
    blocks that needs (None: more than the cap); the smallest slowdown the
    limit catches with 80% power (None without noise). Both at the noise's
    sizing SD, its upper confidence limit."""

    limit: int
    noise: BlockNoise | None
    resolve_pct: float
    needed: int | None
    resolvable_pct: float | None

    def words(self) -> str:
        """Return what the rig can resolve, in words ('' without noise)."""
        if self.noise is None or self.resolvable_pct is None:
            return ""
        power = f"{100 * TARGET_POWER:g}% power"
        within = f"within {self.limit} blocks it resolves a {self.resolvable_pct:.1f}% slowdown with {power}"
        noise = f"{self.noise.describe()}, {self.noise.sizing_words()}"
        if self.resolve_pct <= 0:
            return f"{noise}: {within}"
        if self.needed is None:
            cannot = f"this rig cannot resolve a {self.resolve_pct:g}% slowdown in {BLOCK_LIMIT_CAP} blocks"
            return f"{noise}: {cannot}; {within}"
        return f"{noise}: a {self.resolve_pct:g}% slowdown needs {self.needed} blocks; {within}"

    def reason_words(self) -> str:
        """Return the same, short enough for a verdict's reason ('' without noise)."""
        if self.noise is None or self.resolvable_pct is None:
            return ""
        head = f"rig's A/A block SD {self.noise.sd_pct:.2f}% (sized on {self.noise.sizing_sd_pct():.2f}%)"
        resolves = f"{self.limit} blocks resolve {self.resolvable_pct:.1f}% (80% power)"
        if self.resolve_pct > 0 and self.needed is None:
            return f"{head}: {self.resolve_pct:g}% needs over {BLOCK_LIMIT_CAP} blocks; {resolves}"
        return f"{head}: {resolves}"


def size_blocks(
    noise: BlockNoise | None,
    *,
    alpha: float,
    threshold_pct: float,
    resolve_pct: float,
    floor_blocks: int,
    cap: int = BLOCK_LIMIT_CAP,
) -> BlockSizing:
    """Return the block limit for a rig of this ``noise``: the blocks a
    ``resolve_pct`` slowdown needs for 80% power at the noise's sizing SD (its
    upper confidence limit; ``cap`` when more), never fewer than
    ``floor_blocks`` (the subscription's own limit, which stands alone with too
    little noise measured or ``resolve_pct`` 0)."""
    floor_blocks = max(2, floor_blocks)
    if noise is None or noise.n_blocks < MIN_NOISE_BLOCKS:
        return BlockSizing(floor_blocks, None, resolve_pct, None, None)
    sd_pct = noise.sizing_sd_pct()
    needed = None
    limit = floor_blocks
    if resolve_pct > 0:
        needed = blocks_needed(sd_pct, resolve_pct, alpha=alpha, threshold_pct=threshold_pct, cap=cap)
        limit = max(floor_blocks, needed if needed is not None else cap)
    plan = block_plan(alpha=alpha, threshold_pct=threshold_pct, max_blocks=limit)
    return BlockSizing(limit, noise, resolve_pct, needed, resolvable_pct(sd_pct, plan))

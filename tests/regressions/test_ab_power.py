"""The block limit sized from a rig's own noise (regressions/ab_power.py): the
pooled SD against statistics.variance, the look-by-look power against the
sequential rule itself simulated on normal blocks, and the sizing's limits."""

from __future__ import annotations

import math
import statistics

import numpy as np
import pytest

from leaderboard.regressions.ab import Decision
from leaderboard.regressions.ab_blocks import Block, block_plan, blocks_judge
from leaderboard.regressions.ab_power import (
    BLOCK_LIMIT_CAP,
    MIN_NOISE_BLOCKS,
    SIZING_CONFIDENCE,
    BlockNoise,
    blocks_needed,
    plan_power,
    pooled_block_noise,
    resolvable_pct,
    size_blocks,
)
from runners.ab_design import Side


def _block_of(figure: float) -> Block:
    """A block of one unit whose figure, ln(B/A), is ``figure``."""
    return Block((Side.A, Side.B), (100.0, 100.0 * math.exp(figure)))


def test_the_pooled_sd_is_within_each_check_and_skips_checks_of_one_block() -> None:
    one, two = [0.01, -0.012, 0.004], [0.03, 0.02, 0.05, 0.041]
    noise = pooled_block_noise([one, two, [0.9], []])
    assert noise is not None and (noise.n_checks, noise.n_blocks, noise.df) == (2, 7, 5)
    pooled = (2 * statistics.variance(one) + 3 * statistics.variance(two)) / 5
    assert noise.sd_pct == pytest.approx(100 * math.sqrt(pooled))
    # A check's own offset is not noise within it: shifting a check changes nothing.
    shifted = pooled_block_noise([one, [v + 0.2 for v in two]])
    assert shifted is not None and shifted.sd_pct == pytest.approx(noise.sd_pct)
    assert pooled_block_noise([[0.1], []]) is None


def test_the_sizing_sd_is_an_upper_limit_that_covers_the_true_sd_nine_times_in_ten() -> None:
    # Coverage by simulation, not the formula again: samples of normal blocks
    # from checks of 6, the true SD under the upper limit in ~90% of them.
    rng = np.random.default_rng(11)
    for n_checks in (2, 10):
        covered = 0
        for _ in range(2000):
            noise = pooled_block_noise(list(rng.normal(0, 0.02, (n_checks, 6))))
            assert noise is not None and noise.df == 5 * n_checks
            assert noise.sizing_sd_pct() > noise.sd_pct
            covered += noise.sizing_sd_pct() >= 2.0
        assert covered / 2000 == pytest.approx(SIZING_CONFIDENCE, abs=0.02)
    # The factor falls as the rig's A/A blocks add up.
    factors = [BlockNoise(2.0, df, 1, df + 1).sizing_sd_pct() / 2.0 for df in (7, 11, 60, 300)]
    assert factors == sorted(factors, reverse=True) and factors[-1] < 1.06


def test_a_calm_looking_short_history_is_sized_for_the_noise_it_may_hide() -> None:
    # The fortieth session (benchmarks/README.md): 12 A/A blocks of SD 2.0% sized
    # 18 blocks on the sample SD; the 2% set that followed pooled to 2.94%.
    args = {"alpha": 0.01, "threshold_pct": 1.5, "floor_blocks": 8, "resolve_pct": 2.0}
    short = size_blocks(BlockNoise(2.0, 11, 1, 12), **args)
    assert blocks_needed(2.0, 2.0, alpha=0.01, threshold_pct=1.5) == 18 < short.limit
    assert short.limit >= blocks_needed(2.94, 2.0, alpha=0.01, threshold_pct=1.5, cap=80) - 6
    # The same SD over 300 blocks: hardly more than the sample SD asks for.
    long = size_blocks(BlockNoise(2.0, 290, 10, 300), **args)
    assert 18 <= long.limit <= 20 < short.limit
    assert "sized on" in short.words() and "upper 90% confidence limit" in short.words()


def _simulated_power(sd_pct: float, effect_pct: float, max_blocks: int, *, n: int = 400, seed: int = 7) -> float:
    """Return the share of ``n`` sequential confirmations of normal blocks of
    SD ``sd_pct`` and a slowdown of ``effect_pct`` that the rule calls a regression."""
    rng = np.random.default_rng(seed)
    plan = block_plan(alpha=0.01, threshold_pct=1.5, max_blocks=max_blocks)
    caught = 0
    for _ in range(n):
        figures = math.log1p(-effect_pct / 100) + rng.normal(0, sd_pct / 100, max_blocks)
        blocks = []
        for look in plan.looks():
            blocks += [_block_of(f) for f in figures[len(blocks) : look]]
            decision = blocks_judge(blocks, plan).decision
            if decision != Decision.CONTINUE:
                break
        caught += decision == Decision.REGRESSION
    return caught / n


@pytest.mark.parametrize(
    ("sd_pct", "effect_pct", "max_blocks"),
    [
        (1.22, 2.0, 12),  # the fast VM's block SD (benchmarks/README.md): 9 of 10 caught there
        (3.79, 2.0, 12),  # the noisier VM's: 2 of 6 caught there
        (3.79, 2.0, 40),
        (3.79, 5.0, 12),
    ],
)
def test_the_plans_power_is_close_below_the_simulated_rule(sd_pct, effect_pct, max_blocks) -> None:
    approx = plan_power(sd_pct, effect_pct, block_plan(alpha=0.01, threshold_pct=1.5, max_blocks=max_blocks))
    simulated = _simulated_power(sd_pct, effect_pct, max_blocks)
    # 400 simulations: the simulated share's SE is at most 0.025.
    assert simulated - 0.12 <= approx <= simulated + 0.06, (approx, simulated)


def test_a_noisier_rig_needs_more_blocks_and_the_limit_found_is_the_first_with_the_power() -> None:
    quiet = blocks_needed(1.22, 2.0, alpha=0.01, threshold_pct=1.5)
    noisy = blocks_needed(3.79, 2.0, alpha=0.01, threshold_pct=1.5, cap=80)
    assert quiet is not None and quiet <= 12  # the fast VM: 12 blocks were enough
    assert noisy is not None and noisy > 12  # the noisy VM: 12 were not
    for limit, sd in [(quiet, 1.22), (noisy, 3.79)]:
        assert plan_power(sd, 2.0, block_plan(alpha=0.01, threshold_pct=1.5, max_blocks=limit)) >= 0.8
        assert plan_power(sd, 2.0, block_plan(alpha=0.01, threshold_pct=1.5, max_blocks=limit - 2)) < 0.8
    assert blocks_needed(3.79, 2.0, alpha=0.01, threshold_pct=1.5, cap=noisy - 2) is None


def test_the_resolvable_slowdown_is_where_the_power_reaches_80_percent() -> None:
    plan = block_plan(alpha=0.01, threshold_pct=1.5, max_blocks=12)
    quiet, noisy = resolvable_pct(1.22, plan), resolvable_pct(3.79, plan)
    assert 1.5 < quiet < 2.0 < noisy
    assert plan_power(3.79, noisy, plan) == pytest.approx(0.8, abs=0.005)


def test_sizing_keeps_the_floor_without_enough_noise_and_caps_what_cannot_be_resolved() -> None:
    args = {"alpha": 0.01, "threshold_pct": 1.5, "floor_blocks": 8}
    assert size_blocks(None, resolve_pct=2.0, **args).limit == 8
    few = BlockNoise(sd_pct=9.0, df=MIN_NOISE_BLOCKS - 2, n_checks=1, n_blocks=MIN_NOISE_BLOCKS - 1)
    unsized = size_blocks(few, resolve_pct=2.0, **args)
    assert unsized.limit == 8 and unsized.words() == unsized.reason_words() == ""
    quiet = size_blocks(BlockNoise(0.5, 30, 3, 33), resolve_pct=2.0, **args)
    assert quiet.limit == 8 and quiet.needed is not None and quiet.needed < 8  # the floor stands
    noisy = size_blocks(BlockNoise(2.5, 60, 5, 65), resolve_pct=2.0, **args)
    assert noisy.limit == noisy.needed and 12 < noisy.limit <= BLOCK_LIMIT_CAP
    hopeless = size_blocks(BlockNoise(9.0, 60, 5, 65), resolve_pct=2.0, **args)
    assert hopeless.needed is None and hopeless.limit == BLOCK_LIMIT_CAP
    assert f"cannot resolve a 2% slowdown in {BLOCK_LIMIT_CAP} blocks" in hopeless.words()
    assert hopeless.resolvable_pct is not None and hopeless.resolvable_pct > 2.0
    assert f"2% needs over {BLOCK_LIMIT_CAP} blocks" in hopeless.reason_words()
    fixed = size_blocks(BlockNoise(9.0, 60, 5, 65), resolve_pct=0, **args)
    assert fixed.limit == 8 and "within 8 blocks it resolves" in fixed.words()

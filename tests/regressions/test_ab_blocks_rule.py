"""The interleaved A/B rule alone (regressions/ab_blocks.py, runners/ab_design.py):
the order, the block's figure, the design chosen from memory, and the rule's level
and power on autocorrelated noise whose truth is known, and on the recorded real
A/A noise replayed in blocks (benchmarks/ab_noise.py)."""

from __future__ import annotations

import math
import random
import sys
from pathlib import Path

import pytest
from scipy import stats

from leaderboard.regressions.ab import Decision, Pair, Plan, ab_judge, ab_order
from leaderboard.regressions.ab_blocks import Block, block_plan, blocks_judge
from runners.ab_design import AbDesign, Side, choose_design, needed_bytes, rep_order

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import ab_noise  # noqa: E402

MIB = 1024 * 1024


def test_a_block_alternates_a_b_b_a_and_odd_blocks_start_with_b() -> None:
    assert "".join(rep_order(0, 4)) == "abbaabba"
    assert "".join(rep_order(1, 4)) == "baabbaab"
    order = rep_order(0, 12)
    after_other = sum(1 for i in range(1, len(order)) if order[i] == Side.A and order[i - 1] == Side.B)
    after_self = sum(1 for i in range(1, len(order)) if order[i] == Side.A and order[i - 1] == Side.A)
    assert abs(after_other - after_self) <= 1  # carry-over balanced
    with pytest.raises(ValueError, match="reps_per_side"):
        rep_order(0, 0)


def _trend_block(order: list[Side], effect: float, slope: float) -> Block:
    return Block(tuple(order), tuple(100 * math.exp(slope * t) * ((1 + effect) if s == Side.B else 1.0)
                                     for t, s in enumerate(order)))  # fmt: skip


def test_a_linear_drift_cancels_in_abba_order_and_not_in_abab() -> None:
    slope = 0.01  # 1% a repetition: a steep drift
    abba = _trend_block(rep_order(0, 6), effect=-0.02, slope=slope)
    assert abba.contrast() == pytest.approx(math.log(0.98), abs=1e-12)
    # The check can fail: the same drift in a plain A B A B order biases every unit the same way.
    abab = _trend_block([Side.A, Side.B] * 6, effect=-0.02, slope=slope)
    assert abab.contrast() == pytest.approx(math.log(0.98) + slope, abs=1e-12)


def test_a_failed_repetition_drops_its_unit_and_a_block_without_units_is_dropped() -> None:
    block = Block(tuple(rep_order(0, 2)), (100.0, None, 90.0, 100.0))
    assert block.unit_log_ratios() == [pytest.approx(math.log(0.9))]
    empty = Block(tuple(rep_order(0, 1)), (None, 50.0))
    assert empty.contrast() is None
    outcome = blocks_judge([empty, block, block, block], block_plan())
    assert outcome.n_pairs == 3 and "blocks" in outcome.reason
    with pytest.raises(ValueError, match="sides"):
        Block((Side.A,), (1.0, 2.0))


def test_two_servers_are_interleaved_only_when_both_fit() -> None:
    model = 300 * MIB
    need = needed_bytes(model)
    assert need == 2 * model + 512 * MIB  # the margin's floor for a small model
    assert choose_design(model_bytes=model, available_bytes=need).design == AbDesign.INTERLEAVED
    tight = choose_design(model_bytes=model, available_bytes=need - 1)
    assert tight.design == AbDesign.RUN_ABBA and "only" in tight.reason
    assert choose_design(model_bytes=model, available_bytes=None).design == AbDesign.RUN_ABBA
    assert choose_design(model_bytes=8000 * MIB, available_bytes=24000 * MIB).needed_bytes == 18000 * MIB  # 2 × + 25%


class Rig:
    """A simulated rig with a known truth: log rate = drift (AR(1), lag-1 ``rho``
    per repetition slot) + a process effect per server + repetition noise."""

    def __init__(self, seed: int, *, rho: float, drift_sd: float, process_sd: float, rep_sd: float) -> None:
        self.rng, self.rho, self.process_sd, self.rep_sd = random.Random(seed), rho, process_sd, rep_sd
        self.innov = drift_sd * math.sqrt(1 - rho * rho)
        self.drift = self.rng.gauss(0.0, drift_sd)

    def rep(self, process: float) -> float:
        self.drift = self.rho * self.drift + self.rng.gauss(0.0, self.innov)
        return math.exp(math.log(100.0) + self.drift + process + self.rng.gauss(0.0, self.rep_sd))

    def process(self) -> float:
        return self.rng.gauss(0.0, self.process_sd)

    def block(self, index: int, effect: float, reps: int) -> Block:
        pa, pb = self.process(), self.process() + math.log1p(effect)
        order = rep_order(index, reps)
        return Block(tuple(order), tuple(self.rep(pb if s == Side.B else pa) for s in order))

    def run_median(self, effect: float, reps: int, gap: int) -> float:
        process = self.process() + math.log1p(effect)
        for _ in range(gap):  # a server's start-up: the drift goes on meanwhile
            self.rep(0.0)
        return sorted(self.rep(process) for _ in range(reps))[reps // 2]


def _interleaved(rig: Rig, effect: float, plan: Plan) -> Decision:
    blocks: list[Block] = []
    while True:
        blocks += [rig.block(len(blocks) + i, effect, 12) for i in range(plan.next_batch(len(blocks)))]
        decision = blocks_judge(blocks, plan).decision
        if decision != Decision.CONTINUE:
            return decision


def _run_abba(rig: Rig, effect: float, plan: Plan) -> Decision:
    pairs: list[Pair] = []
    while True:
        for i in range(len(pairs), len(pairs) + plan.next_batch(len(pairs))):
            first, second = (rig.run_median(e, 6, 30) for e in ((0.0, effect) if ab_order(i) else (effect, 0.0)))
            pairs.append(Pair(first, second, True) if ab_order(i) else Pair(second, first, False))
        decision = ab_judge(pairs, plan).decision
        if decision != Decision.CONTINUE:
            return decision


NOISE = {"rho": 0.995, "drift_sd": 0.03, "process_sd": 0.005, "rep_sd": 0.02}


def _allowed(trials: int, alpha: float) -> int:
    """The most false calls of a rule at level ``alpha`` in ``trials``, but for 1 in 1000 (binomial)."""
    return int(stats.binom.ppf(0.999, trials, alpha))


def test_interleaved_a_a_keeps_the_level_on_a_drifting_rig_and_catches_2_and_5_percent() -> None:
    # Drift of SD 3% with lag-1 0.995 a repetition (~0.74 between runs ~60 slots apart).
    rig = Rig(7, **NOISE)
    aa = [_interleaved(rig, 0.0, block_plan()) for _ in range(400)]
    calls = sum(d in (Decision.REGRESSION, Decision.IMPROVEMENT) for d in aa)
    assert calls <= _allowed(400, 0.01)
    assert aa.count(Decision.NONE) > 300
    five = [_interleaved(rig, -0.05, block_plan()) for _ in range(100)]
    assert five.count(Decision.REGRESSION) >= 95
    two = [_interleaved(rig, -0.02, block_plan(threshold_pct=1.5)) for _ in range(100)]
    assert two.count(Decision.REGRESSION) >= 80
    assert Decision.IMPROVEMENT not in five + two


def test_run_level_abba_on_the_same_rig_sees_less_at_2_percent() -> None:
    rig = Rig(8, **NOISE)
    two = [_run_abba(rig, -0.02, Plan(threshold_pct=1.5)) for _ in range(100)]
    rig = Rig(8, **NOISE)
    interleaved = [_interleaved(rig, -0.02, block_plan(threshold_pct=1.5)) for _ in range(100)]
    assert two.count(Decision.REGRESSION) + 20 < interleaved.count(Decision.REGRESSION)


@pytest.fixture(scope="module")
def quiet_source() -> ab_noise.Source:
    return ab_noise.load_sources()[0]


def test_recorded_noise_has_the_components_the_docstring_names(quiet_source: ab_noise.Source) -> None:
    comp = ab_noise.components(quiet_source)
    assert comp.runs == 560 and comp.reps_per_run == 6
    assert comp.rep_sd_pct == pytest.approx(5.2, abs=0.1)
    assert comp.run_mean_lag1 == pytest.approx(0.74, abs=0.01)


def test_recorded_a_a_noise_replayed_through_the_interleaved_rule(quiet_source: ab_noise.Source) -> None:
    replay = ab_noise.Replay(quiet_source, random.Random(36))
    plan = block_plan()
    aa = [ab_noise.confirm_interleaved(replay, 0.0, plan, 6, "pure", 0.0).decision for _ in range(300)]
    assert sum(d in (Decision.REGRESSION, Decision.IMPROVEMENT) for d in aa) <= _allowed(300, 0.01)
    slow = [ab_noise.confirm_interleaved(replay, -0.10, plan, 6, "pure", 0.0).decision for _ in range(60)]
    assert slow.count(Decision.REGRESSION) >= 54  # 98.5% in 1000 replays (benchmarks/README.md)

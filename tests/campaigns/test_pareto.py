"""The Pareto front over speed × perplexity × peak VRAM (leaderboard.campaigns.pareto):
dominated points, ties, missing figures, and what may never be on the front."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from leaderboard.campaigns.analysis import campaign_analysis
from leaderboard.campaigns.pareto import dominates, front_summary, pareto_points


@dataclass
class T:
    number: int
    value: float | None
    perplexity: float | None = None
    vram: float | None = None
    state: str = "complete"
    params: dict[str, Any] = field(default_factory=dict)
    output_ok: float | None = None
    samples: list[Any] = field(default_factory=list)
    failure_kind: str = ""
    failure_reason: str = ""
    log_tail: str = ""
    duration_s: float | None = None

    @property
    def metrics(self) -> dict[str, Any]:
        return {"perplexity": self.perplexity, "vram_peak_mib": self.vram, "output_ok_fraction": self.output_ok}


def front(trials: list[T], *, maximize: bool = True) -> list[int]:
    return [p.number for p in pareto_points(trials, maximize=maximize) if p.on_front]


def test_a_point_beaten_on_every_axis_is_not_on_the_front() -> None:
    trials = [
        T(1, 20.0, perplexity=10.0, vram=4000),
        T(2, 15.0, perplexity=10.5, vram=4500),  # slower, worse, larger: dominated by 1
        T(3, 25.0, perplexity=12.0, vram=5000),  # fastest
        T(4, 10.0, perplexity=9.0, vram=6000),  # best quality
        T(5, 12.0, perplexity=11.0, vram=3000),  # smallest
        T(6, 20.0, perplexity=10.0, vram=4100),  # equal to 1 but larger: dominated
    ]
    assert front(trials) == [1, 3, 4, 5]


def test_equal_points_are_both_on_the_front() -> None:
    trials = [T(1, 20.0, 10.0, 4000), T(2, 20.0, 10.0, 4000), T(3, 19.0, 10.0, 4000)]
    assert front(trials) == [1, 2]
    assert not dominates((1.0, 2.0, 3.0), (1.0, 2.0, 3.0))


def test_a_missing_perplexity_counts_as_the_worst() -> None:
    trials = [
        T(1, 20.0, perplexity=None, vram=4000),  # as fast and lean as 2, quality unknown: dominated
        T(2, 20.0, perplexity=10.0, vram=4000),
        T(3, 30.0, perplexity=None, vram=4000),  # unknown quality, but nothing is as fast: on the front
    ]
    assert front(trials) == [2, 3]


def test_without_any_vram_or_perplexity_the_front_is_over_what_was_measured() -> None:
    cpu = [T(1, 20.0, perplexity=10.0), T(2, 25.0, perplexity=12.0), T(3, 18.0, perplexity=12.0)]
    assert front(cpu) == [1, 2]
    speed_only = [T(1, 20.0), T(2, 25.0), T(3, 25.0)]
    assert front(speed_only) == [2, 3]


def test_failed_infeasible_and_wrong_output_trials_are_never_on_the_front() -> None:
    trials = [
        T(1, 10.0, 10.0, 4000),
        T(2, 99.0, 1.0, 100, state="infeasible"),
        T(3, None, state="failed"),
        T(4, 98.0, 1.0, 100, output_ok=0.5),  # fastest and best, but its answers failed the check
        T(5, 97.0, 1.0, 100, state="aborted"),
        T(6, 9.0, 11.0, 5000, output_ok=1.0),
    ]
    points = pareto_points(trials)
    assert [p.number for p in points] == [1, 6]
    assert front(trials) == [1]


def test_a_minimised_objective_puts_the_lowest_on_the_front() -> None:
    trials = [T(1, 120.0, 10.0, 4000), T(2, 80.0, 10.0, 4000)]  # ttft_ms: lower is better
    assert front(trials, maximize=False) == [2]
    assert front(trials, maximize=True) == [1]


def test_the_analysis_names_the_front_and_the_dominated_model_files() -> None:
    """Seed 003's kind of finding, from measurements: IQ2_M is slower than IQ2_XXS
    but better in quality, so both are Pareto-optimal; a file beaten on all three
    axes by them is named as dominated."""
    trials = [
        T(1, 12.0, perplexity=1.3073, vram=7900, params={"model": "/m/q3_k_m.gguf"}),
        T(2, 11.0, perplexity=1.3073, vram=8000, params={"model": "/m/q3_k_m.gguf"}),
        T(3, 21.6, perplexity=1.3138, vram=7600, params={"model": "/m/iq2_m.gguf"}),
        T(4, 29.9, perplexity=1.3300, vram=7500, params={"model": "/m/iq2_xxs.gguf"}),
        T(5, 20.0, perplexity=1.3400, vram=7700, params={"model": "/m/iq1_s.gguf"}),  # dominated by 3 and 4
    ]
    spec = {
        "objective": "decode_tokens_per_s",
        "space": {"model": ["/m/q3_k_m.gguf", "/m/iq2_m.gguf", "/m/iq2_xxs.gguf", "/m/iq1_s.gguf"]},
    }
    analysis = campaign_analysis(spec, trials)
    assert analysis.pareto == [1, 3, 4]
    assert analysis.pareto_summary[0] == (
        "Trial 1 (model=q3_k_m.gguf): 12 decode_tokens_per_s, perplexity 1.307, peak VRAM 7900 MiB"
    )
    assert analysis.pareto_summary[-1] == (
        "Pareto-optimal model files: q3_k_m.gguf, iq2_m.gguf, iq2_xxs.gguf; every trial of iq1_s.gguf is dominated."
    )
    assert [p["number"] for p in analysis.pareto_points] == [1, 2, 3, 4, 5]


def test_a_long_front_is_named_up_to_a_limit_then_counted() -> None:
    # Each faster trial costs more VRAM: all twenty are on the front.
    trials = [T(i, float(i), perplexity=10.0, vram=1000.0 + i) for i in range(1, 21)]
    lines = front_summary(pareto_points(trials), [], "decode_tokens_per_s", limit=5)
    assert len(lines) == 6 and lines[0].startswith("Trial 1 (base): 1 decode_tokens_per_s")
    assert lines[-1] == "… and 15 more trials on the front (marked ◆ in the table)."

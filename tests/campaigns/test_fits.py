"""Power-law fits (leaderboard.core.fits): both forms recover known
coefficients from noisy synthetic data, their α intervals cover the truth about
as often as they claim, and seed 003's published phases are refitted honestly."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np
import pytest

from leaderboard.campaigns.analysis import MODEL_GB_IN_RAM, campaign_analysis, model_gb_in_ram, seed_003_fit
from leaderboard.core.fits import CEILING, POWER, best_fit, fit_ceiling, fit_power, printed_fit
from leaderboard.results.published_data import PUBLISHED_RESULTS

SEED_003 = {"a": 9.81e-6, "c": 42.0, "alpha": 4.247}


def _ceiling_data(seed: int, *, noise: float = 0.03) -> tuple[np.ndarray, np.ndarray]:
    """Seed 003's curve over 0–30 GB in RAM with ``noise`` (log-normal, relative)."""
    rng = np.random.default_rng(seed)
    x = np.arange(0.0, 31.0)
    y = SEED_003["a"] * (SEED_003["c"] - x) ** SEED_003["alpha"] * np.exp(rng.normal(0, noise, x.size))
    return x, y


def test_it_recovers_a_c_and_alpha_of_a_ceiling_curve_from_noisy_data() -> None:
    x, y = _ceiling_data(seed=1)
    fit = fit_ceiling("model GB in RAM", x, y)
    assert fit is not None and fit.form == CEILING and not fit.c_given
    assert fit.alpha_ci is not None and fit.alpha_ci[0] <= SEED_003["alpha"] <= fit.alpha_ci[1]
    assert fit.c == pytest.approx(SEED_003["c"], rel=0.1)
    assert fit.n == 31 and fit.r2 is not None and fit.r2 > 0.99
    # a and C trade off against each other; the curve itself is what must come back.
    for at in (0.0, 15.0, 30.0):
        truth = SEED_003["a"] * (SEED_003["c"] - at) ** SEED_003["alpha"]
        assert fit.predict(at) == pytest.approx(truth, rel=0.05)


def test_its_alpha_interval_covers_the_truth_about_95_times_in_100() -> None:
    covered = 0
    runs = 40
    for seed in range(runs):
        fit = fit_ceiling("x", *_ceiling_data(seed))
        assert fit is not None and fit.alpha_ci is not None
        covered += fit.alpha_ci[0] <= SEED_003["alpha"] <= fit.alpha_ci[1]
    # A 95% interval misses about 2 in 40; with C fitted the interval is approximate.
    assert covered >= 34, f"the α interval covered the truth in {covered} of {runs} runs"


def test_a_given_c_fits_a_and_alpha_only_with_a_narrower_interval() -> None:
    x, y = _ceiling_data(seed=2)
    free = fit_ceiling("x", x, y)
    given = fit_ceiling("x", x, y, c=42.0)
    assert free is not None and given is not None and given.c_given and given.c == 42.0
    assert given.alpha_ci is not None and given.alpha_ci[0] <= SEED_003["alpha"] <= given.alpha_ci[1]
    assert free.alpha_ci is not None
    assert given.alpha_ci[1] - given.alpha_ci[0] < free.alpha_ci[1] - free.alpha_ci[0]
    assert given.a == pytest.approx(SEED_003["a"], rel=0.3)


def test_it_recovers_a_and_alpha_of_a_plain_power_law() -> None:
    rng = np.random.default_rng(3)
    x = np.array([1, 2, 3, 4, 6, 8, 12, 16], dtype=float)
    y = 5.0 * x**0.7 * np.exp(rng.normal(0, 0.02, x.size))
    fit = fit_power("threads", x, y)
    assert fit is not None and fit.form == POWER and fit.c is None
    assert fit.alpha_ci is not None and fit.alpha_ci[0] <= 0.7 <= fit.alpha_ci[1]
    assert fit.a == pytest.approx(5.0, rel=0.05)


def test_the_better_form_is_chosen_by_adjusted_r2() -> None:
    x, y = _ceiling_data(seed=4)
    ceiling_data = best_fit([fit_power("x", x[1:], y[1:]), fit_ceiling("x", x[1:], y[1:])])
    assert ceiling_data is not None and ceiling_data.form == CEILING

    xs = np.arange(1.0, 21.0)
    ys = 3.0 * xs**1.5 * np.exp(np.random.default_rng(5).normal(0, 0.02, xs.size))
    power_data = best_fit([fit_power("x", xs, ys), fit_ceiling("x", xs, ys)])
    assert power_data is not None and power_data.form == POWER


@pytest.mark.parametrize(
    ("x", "y", "c"),
    [
        ([1, 1, 2, 2], [1, 2, 3, 4], None),  # two distinct x
        ([1, 2, 3, 4], [1, 2, 0, 4], None),  # a zero y has no log
        ([1, 2, 3, 4], [4, 3, 2, 1], 3.5),  # C not above every x
    ],
)
def test_it_returns_none_when_the_points_cannot_determine_a_curve(x, y, c) -> None:
    assert fit_ceiling("x", x, y, c=c) is None
    if c is None:
        assert fit_power("x", x, y) is None


def _seed_003_phases() -> dict[str, dict]:
    data = json.loads(PUBLISHED_RESULTS.read_text())
    return {e["phase"]: e for e in data["experiments"] if e["source_file"].startswith("003") and e["phase"]}


def test_seed_003s_published_phases_do_not_pin_down_its_alpha() -> None:
    """Refit t/s = a·(42 − x)^α, C as published, on the phases whose GB in RAM
    can be reconstructed at all. The article prints no x: only phases 4 (16
    layers) and 10 (17 layers) on Q3_K_M and phase 12 (27 layers) on IQ2_XXS,
    9.6 GB, give a layer count and a file. x = file GB × (1 − layers / 40), 40
    layers per the authors' repository (the article does not say), and the
    Q3_K_M file's size is not published: 14–17.5 GB spans 3.2–4 bits per
    weight for 35B parameters. What comes out is steeper than the article's
    4.247 for every size and moves by more than 1.5 across them: three
    reconstructed points neither reproduce nor pin down α = 4.247."""
    phases = _seed_003_phases()
    assert phases["Phase 12"]["config"]["quant"] == "IQ2_XXS"
    layers = {name: phases[name]["config"]["n_gpu_layers"] for name in ("Phase 4", "Phase 10", "Phase 12")}
    speeds = [phases[name]["decode_tokens_per_s"] for name in layers]
    alphas = {}
    for q3_k_m_gb in (14.0, 16.0, 17.5):
        sizes = {"Phase 4": q3_k_m_gb, "Phase 10": q3_k_m_gb, "Phase 12": 9.6}
        in_ram = [sizes[name] * (1 - layers[name] / 40) for name in layers]
        fit = fit_ceiling("model GB in RAM", in_ram, speeds, c=SEED_003["c"])
        assert fit is not None and fit.n == 3 and fit.alpha_ci is not None
        alphas[q3_k_m_gb] = fit.alpha
    assert all(alpha > SEED_003["alpha"] for alpha in alphas.values()), alphas
    assert max(alphas.values()) - min(alphas.values()) > 1.5, alphas


def test_model_gb_in_ram_is_the_share_of_the_file_not_offloaded() -> None:
    common = {"file_size_bytes": 9_600_000_000, "layers": 40, "tensor_overrides": ""}
    assert model_gb_in_ram(**common, n_gpu_layers=27, has_gpu=True) == pytest.approx(9.6 * 13 / 40)
    assert model_gb_in_ram(**common, n_gpu_layers=99, has_gpu=True) == 0.0
    assert model_gb_in_ram(**common, n_gpu_layers=27, has_gpu=False) == pytest.approx(9.6)
    assert model_gb_in_ram(**common, n_gpu_layers=-1, has_gpu=True) is None  # llama.cpp's "auto"
    assert model_gb_in_ram(**common, n_gpu_layers=None, has_gpu=True) is None
    assert model_gb_in_ram(**{**common, "tensor_overrides": "exps=CPU"}, n_gpu_layers=27, has_gpu=True) is None
    assert model_gb_in_ram(**{**common, "layers": None}, n_gpu_layers=27, has_gpu=True) is None


@dataclass
class _Trial:
    number: int
    params: dict
    value: float
    state: str = "complete"
    metrics: dict = field(default_factory=dict)
    samples: list = field(default_factory=list)
    failure_kind: str = ""
    failure_reason: str = ""
    log_tail: str = ""
    duration_s: float | None = None


def test_the_analysis_fits_the_objective_over_the_model_gb_left_in_ram() -> None:
    """An n_gpu_layers sweep of one 20 GB, 40-layer file on seed 003's curve: the
    analysis fits over n_gpu_layers and over the derived GB in RAM, and the
    latter comes back in seed 003's form with its α."""
    rng = np.random.default_rng(11)
    trials, in_ram = [], {}
    for number, layers_on_gpu in enumerate(range(0, 41, 4), 1):
        x = model_gb_in_ram(file_size_bytes=20_000_000_000, layers=40, n_gpu_layers=layers_on_gpu, has_gpu=True,
                            tensor_overrides="")  # fmt: skip
        assert x is not None
        in_ram[number] = x
        speed = SEED_003["a"] * (SEED_003["c"] - x) ** SEED_003["alpha"] * float(np.exp(rng.normal(0, 0.02)))
        trials.append(_Trial(number, {"n_gpu_layers": layers_on_gpu}, speed))
    spec = {"objective": "decode_tokens_per_s", "space": {"n_gpu_layers": list(range(0, 41, 4))}}
    analysis = campaign_analysis(spec, trials, derived_x={MODEL_GB_IN_RAM: in_ram})
    fits = {fit["parameter"]: fit for fit in analysis.fits}
    assert set(fits) == {"n_gpu_layers", MODEL_GB_IN_RAM}
    ram = fits[MODEL_GB_IN_RAM]
    assert ram["form"] == CEILING and ram["n"] == 11
    assert ram["alpha_ci"][0] <= SEED_003["alpha"] <= ram["alpha_ci"][1]
    assert ram["alternative"] is not None and ram["alternative"]["form"] == POWER
    assert fits["n_gpu_layers"]["points"][0] == {"x": 0.0, "y": trials[0].value}


def test_seed_003s_printed_fit_is_read_from_the_published_data() -> None:
    """The campaign pages' seed 003 fit is the published data's, not a second copy:
    its figures as the article printed them (oracle: the article's own numbers)."""
    fit = seed_003_fit()

    assert (fit["a"], fit["c"], fit["alpha"], fit["n"]) == (9.81e-6, 42.0, 4.247, 770)
    assert fit["form"] == CEILING and fit["c_given"] and fit["alpha_ci"] is None and fit["r2"] is None
    assert fit["parameter"] == MODEL_GB_IN_RAM and fit["source"] == "seed 003"
    assert fit["formula"] == "9.81e-06·(42 − x)^4.247"
    assert campaign_analysis({"space": {}}, []).published_fit == fit


def test_a_printed_fit_of_another_shape_is_not_read() -> None:
    assert printed_fit("tok/s = 2 * model_size_gb^1.5") is None
    law = printed_fit("y = 3e-2 × (10 - gb)^2")
    assert law is not None and (law.a, law.c, law.alpha, law.parameter) == (0.03, 10.0, 2.0, "gb")
    assert law.predict(8.0) == pytest.approx(0.03 * 4) and law.predict(10.0) is None

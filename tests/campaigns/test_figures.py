"""A trial's figures are computed one way (runners.campaign.figures): from the run
document on the rig and from the stored run on the service they are the same, they
agree with the run's own summary (results.services.summary, an independent
computation), and the server's decode figure wins even when it is 0.0."""

from __future__ import annotations

import statistics

import pytest

from leaderboard.campaigns.dispatch import run_document
from runners.campaign.figures import PER_REPETITION, repetition_decode, repetition_seconds, trial_figures

SAMPLES = [
    # Listed out of order on purpose: repetitions are read by index.
    {"index": 2, "decode_tokens_per_s_server": 0.0, "decode_tokens_per_s_client": 50.0, "prefill_tokens_per_s": 900.0,
     "ttft_ms": 40.0, "tokens_generated": 16, "energy_j": 2.0, "vram_peak_mib": 700.0, "output_ok": True},
    {"index": 1, "decode_tokens_per_s_server": 80.0, "decode_tokens_per_s_client": 75.0, "prefill_tokens_per_s": 1000.0,
     "ttft_ms": 30.0, "tokens_generated": 16, "energy_j": 1.5, "vram_peak_mib": 690.0, "output_ok": True},
    {"index": 3, "decode_tokens_per_s_server": None, "decode_tokens_per_s_client": 60.0, "prefill_tokens_per_s": None,
     "ttft_ms": 35.0, "tokens_generated": 16, "energy_j": 1.0, "vram_peak_mib": None, "output_ok": False},
]  # fmt: skip


def test_the_server_figure_wins_even_when_it_is_zero():
    assert repetition_decode({"decode_tokens_per_s_server": 0.0, "decode_tokens_per_s_client": 50.0}) == 0.0
    assert repetition_decode({"decode_tokens_per_s_server": None, "decode_tokens_per_s_client": 50.0}) == 50.0
    assert repetition_decode({}) is None
    # A reported rate of 0 gives no time for the tokens (not a division by zero).
    assert repetition_seconds(SAMPLES[0]) == pytest.approx(0.040)
    assert repetition_seconds(SAMPLES[1]) == pytest.approx(0.030 + 16 / 80.0)


def test_every_objective_is_kept_per_repetition_in_repetition_order():
    figures = trial_figures(SAMPLES)
    assert figures.repetitions == {
        "decode_tokens_per_s": [80.0, 0.0, 60.0],
        "prefill_tokens_per_s": [1000.0, 900.0],
        "ttft_ms": [30.0, 40.0, 35.0],
        "tokens_per_kwh": [16 / (1.5 / 3.6e6), 16 / (2.0 / 3.6e6), 16 / (1.0 / 3.6e6)],
        "vram_peak_mib": [690.0, 700.0],
    }
    assert set(figures.repetitions) == set(PER_REPETITION)
    assert figures.metrics["decode_tokens_per_s"] == pytest.approx(statistics.fmean([80.0, 0.0, 60.0]))
    assert figures.metrics["tokens_per_kwh"] == pytest.approx(48 / (4.5 / 3.6e6))  # pooled, not a mean of ratios
    assert figures.metrics["output_ok_fraction"] == pytest.approx(2 / 3)
    assert figures.metrics["vram_peak_mib"] == 700.0 and figures.metrics["n_samples"] == 3
    assert figures.measured_s == pytest.approx(0.105 + 16 / 80.0 + 16 / 60.0)
    # Energy missing from one repetition: tokens/kWh would be a guess.
    partial = trial_figures([{**SAMPLES[0], "energy_j": None}, SAMPLES[1]])
    assert partial.metrics["tokens_per_kwh"] is None and len(partial.repetitions["tokens_per_kwh"]) == 1


@pytest.mark.django_db
def test_the_service_computes_from_a_stored_run_what_the_rig_computes_from_its_document(make_run):
    run = make_run(samples=[dict(s) for s in SAMPLES])
    stored, sent = trial_figures(run_document(run)["samples"]), trial_figures(SAMPLES)
    assert stored == sent
    # The run's own summary (its own code) agrees on every mean the trial keeps.
    assert stored.metrics["decode_tokens_per_s"] == pytest.approx(run.decode_tokens_per_s_mean)
    assert stored.metrics["prefill_tokens_per_s"] == pytest.approx(run.prefill_tokens_per_s_mean)
    assert stored.metrics["ttft_ms"] == pytest.approx(run.ttft_ms_mean)
    assert stored.metrics["tokens_per_kwh"] == pytest.approx(run.tokens_per_kwh)

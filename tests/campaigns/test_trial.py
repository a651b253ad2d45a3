"""One trial through the runner's real pipeline with Gemma 3 270M on the CPU: a
trial the pruner stops after its first repetition keeps that repetition; the
base config plus the trial's values is what llama-server is started with."""

from __future__ import annotations

import json

import pytest

from runners.campaign.search import MedianPrune
from runners.campaign.spec import CampaignSpec
from runners.campaign.trial import measure_trial, trial_config


def test_trial_config_merges_the_values_and_drafts_with_the_model_itself():
    base = {"server": {"model": "/m.gguf", "draft_model": "/d.gguf", "draft_n_max": 8, "threads": 4}}
    assert trial_config(base, {"spec_type": "none", "threads": 2}, repetitions=3) == {
        "server": {"model": "/m.gguf", "threads": 2, "spec_type": "none"},
        "workload": {"repetitions": 3},
    }
    asked = trial_config(base, {"threads": 2}, repetitions=1, trial={"prune_history": [[1.0]]})
    assert asked["trial"] == {"prune_history": [[1.0]]}
    drafted = trial_config({"server": {"model": "/m.gguf"}}, {"spec_type": "draft-simple"}, repetitions=1)
    assert drafted["server"]["draft_model"] == "/m.gguf"
    assert trial_config(base, {"tensor_overrides": ""}, repetitions=1)["server"]["tensor_overrides"] == []


@pytest.mark.llama
def test_a_pruned_trial_stops_after_its_first_repetition_and_keeps_it(gemma_server_section, campaign_cache_dir):
    """The history (three trials at an impossible 10^6 t/s) makes the median rule fire
    for sure; the rig reads it from the trial's [trial], as a job's would be."""
    server = gemma_server_section(startup_timeout_s=60.0, spec_type="none")
    server.pop("draft_model")
    base = {"server": server, "workload": {"max_tokens": 16, "warmup": 0}, "cache_dir": str(campaign_cache_dir)}
    spec = CampaignSpec.from_mapping({"name": "p", "space": {"threads": [2]}, "repetitions": 3})

    trial = measure_trial(base, spec, 1, {"threads": 2}, prune=MedianPrune("maximize", [[1e6, 1e6, 1e6]] * 3))

    assert trial.pruned and trial.state == "complete"
    assert len(trial.samples) == 1 and trial.value == pytest.approx(trial.samples[0]) and trial.value > 0
    assert trial.metrics["n_samples"] == 1 and "pruned after 1 repetition" in trial.failure_reason
    assert trial.metrics["perplexity"] > 1  # measured (or cached per sha256) for the trial's model file
    assert json.dumps(trial.payload())  # what the service receives is JSON

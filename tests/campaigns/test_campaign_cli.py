"""A real campaign from the rig's terminal (``python -m runners campaign``): Gemma 3
270M on the CPU through the real llama-server, two model files of different
quantization with their perplexity measured for real, speculative types (none,
Gemma as its own draft, n-gram), and a context that cannot be allocated, which
fails for real and is stored with its cause. Each trial is posted as a run to a
live Rigboard and recorded as a trial of the campaign."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from leaderboard.campaigns.models import Campaign
from leaderboard.results.models import Run
from runners import cli

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_campaign_from_the_terminal_measures_stores_and_survives_a_failed_trial(
    make_rig_with_token, live_server, gemma_server_section, gemma_gguf, gemma_q8_gguf, campaign_cache_dir, tmp_path
):
    rig = make_rig_with_token("cpu-rig")
    server = gemma_server_section(startup_timeout_s=60.0)
    server.pop("draft_model")
    server["spec_type"] = "none"
    rig_config = {
        "service": {"url": live_server.url, "token": rig.raw, "rig": "cpu-rig", "spool_dir": str(tmp_path / "spool")},
        "server": server,
        "workload": {"max_tokens": 16, "warmup": 0, "request_timeout_s": 60.0},
        "cache_dir": str(campaign_cache_dir),
    }
    campaign = {
        "name": "gemma on the cpu",
        "strategy": "random",
        "seed": 11,
        "repetitions": 1,
        "budget": {"trials": 12},
        "space": {
            "model": [str(gemma_gguf), str(gemma_q8_gguf)],
            "threads": [1, 2],
            "cache_type_k": ["f16", "q8_0"],
            "flash_attn": ["on", "off"],
            "spec_type": ["none", "draft-simple", "ngram-simple"],
            "draft_n_max": [4, 8],
            "ctx_size": [1024, 2048, 20000000],
        },
    }
    (tmp_path / "rig.json").write_text(json.dumps(rig_config))
    (tmp_path / "campaign.json").write_text(json.dumps(campaign))

    code = cli.main(["campaign", "--config", str(tmp_path / "rig.json"), "--campaign", str(tmp_path / "campaign.json")])

    assert code == 0
    stored = Campaign.objects.get()
    assert stored.status == "finished" and stored.rig == rig.rig
    trials = list(stored.trials.filter(role="search"))
    assert [t.number for t in trials] == list(range(1, 13))
    failed = [t for t in trials if t.state == "failed"]
    complete = [t for t in trials if t.state == "complete"]
    assert complete and failed
    # Every trial asking for the huge context failed for real, with llama-server's own words.
    for trial in trials:
        if trial.params["ctx_size"] == 20000000:
            assert trial.state == "failed" and trial.failure_kind == "out_of_memory", trial.failure_reason
            assert "allocate" in trial.log_tail
            assert trial.run is None
    for trial in complete:
        assert trial.run is not None and trial.run.status == "finished"
        assert trial.run.samples.count() == 1 and trial.value == pytest.approx(trial.run.decode_tokens_per_s_mean)
        assert trial.metrics["perplexity"] > 1
    # Both quantizations ran and their perplexity differs (measured, not copied).
    by_model = {Path(t.params["model"]).name: t.metrics["perplexity"] for t in complete}
    assert len(by_model) == 2 and len(set(by_model.values())) == 2
    margins = sorted({t.metrics["perplexity_margin_pct"] for t in complete})
    assert margins[0] == 0 and margins[1] > 0
    assert {t.params["spec_type"] for t in complete} >= {"none", "draft-simple"} or len(complete) < 4
    # The search over, its best feasible trial was measured again with the full 10 repetitions.
    confirmation = stored.trials.get(role="confirmation")
    best = max(complete, key=lambda t: t.value)  # one repetition per trial: nothing is pruned
    assert confirmation.number == 13 and confirmation.state == "complete", confirmation.failure_reason
    assert confirmation.params == best.params
    assert confirmation.run.status == "finished" and confirmation.run.samples.count() == 10
    assert len(confirmation.samples) == 10 and confirmation.value == pytest.approx(
        confirmation.run.decode_tokens_per_s_mean
    )
    assert Run.objects.filter(rig=rig.rig).count() == len([t for t in trials if t.run_uuid]) + 1

    page = live_server.url + f"/campaigns/{stored.id}/"
    import requests

    html = requests.get(page, timeout=30).text
    assert "12 of" in html and "out of memory" in html
    # Gemma 270M's 16 tokens are no game: every answer failed the output check, so nothing is
    # recommended and the confirmation measured the fastest trial's speed only.
    assert "No configuration is recommended" in html and "--model" not in html
    assert "confirmed by 10 repetitions" in html and "It confirms a speed, not a recommendation" in html


def test_an_adaptive_campaign_minimising_ttft_is_confirmed_with_its_interval(
    make_rig_with_token, live_server, gemma_server_section, campaign_cache_dir, tmp_path
):
    """The held-back check of issue 26: a real adaptive campaign minimising TTFT on
    Gemma through the real llama-server; its confirmation keeps the TTFT of each of
    its 5 repetitions, so the page and the API say "confirmed by 5 repetitions" with
    the 95% interval. Tiny: two trials of one repetition, 8 tokens each."""
    import requests

    rig = make_rig_with_token("ttft-rig")
    server = gemma_server_section(startup_timeout_s=60.0)
    server.pop("draft_model")
    server["spec_type"] = "none"
    rig_config = {
        "service": {"url": live_server.url, "token": rig.raw, "rig": "ttft-rig", "spool_dir": str(tmp_path / "spool")},
        "server": server,
        "workload": {"max_tokens": 8, "warmup": 0, "request_timeout_s": 60.0},
        "cache_dir": str(campaign_cache_dir),
    }
    campaign = {
        "name": "ttft on the cpu",
        "strategy": "adaptive",
        "seed": 3,
        "objective": "ttft_ms",
        "repetitions": 1,
        "confirm_repetitions": 5,
        "budget": {"trials": 2},
        "space": {"threads": [1, 2]},
    }
    (tmp_path / "rig.json").write_text(json.dumps(rig_config))
    (tmp_path / "campaign.json").write_text(json.dumps(campaign))

    code = cli.main(["campaign", "--config", str(tmp_path / "rig.json"), "--campaign", str(tmp_path / "campaign.json")])

    assert code == 0
    stored = Campaign.objects.get()
    confirmation = stored.trials.get(role="confirmation")
    assert confirmation.state == "complete", confirmation.failure_reason
    ttft = [s.ttft_ms for s in confirmation.run.samples.order_by("index")]
    assert len(ttft) == 5 and confirmation.samples == pytest.approx(ttft)
    assert confirmation.repetitions["ttft_ms"] == pytest.approx(ttft)
    assert len(confirmation.repetitions["decode_tokens_per_s"]) == 5
    summary = requests.get(f"{live_server.url}/api/campaigns/{stored.id}/", timeout=30).json()["analysis"][
        "confirmation"
    ]
    assert summary["confirmed"] and summary["n"] == 5 and summary["mean"] == pytest.approx(sum(ttft) / 5)
    assert summary["ci95_low"] < summary["mean"] < summary["ci95_high"]
    assert summary["figures"]["decode_tokens_per_s"]["n"] == 5
    html = requests.get(f"{live_server.url}/campaigns/{stored.id}/", timeout=30).text
    interval = f"(95% CI {summary['ci95_low']:.2f} to {summary['ci95_high']:.2f})"
    assert f"confirmed by 5 repetitions: mean {summary['mean']:.2f} {interval}" in html

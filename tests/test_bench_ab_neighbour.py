"""The drift rounds' decoding neighbour (benchmarks/ab_neighbour.py) on the real
llama-server with Gemma 3 270M: it starts a second server, decodes on it,
records the spell, and leaves no server running when the round ends; and the
share of a window it was on is computed from its spells."""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import ab_neighbour  # noqa: E402


def _running(pid: int | None) -> bool:
    """Whether ``pid`` is a live process (not gone, not a zombie), from /proc."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return pid is not None and stat.rsplit(")", 1)[1].split()[0] != "Z"


@pytest.mark.llama
def test_the_neighbour_decodes_in_spells_and_stops_with_the_round(llama_server_bin: Path, gemma_gguf: Path) -> None:
    neighbour = ab_neighbour.DecodingNeighbour(
        binary=str(llama_server_bin), model=str(gemma_gguf), mean_on_s=600.0, mean_off_s=0.01, max_tokens=4, seed=1
    )
    with neighbour:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and not (neighbour.spells and neighbour.spells[0].completions >= 2):
            time.sleep(0.2)
        assert neighbour.spells and neighbour.spells[0].completions >= 2, neighbour.record()
        pid = neighbour.spells[0].pid
        assert _running(pid), "the neighbour's llama-server is not running during its spell"
        window_end = neighbour.now_s()
    record = neighbour.record()
    spell = record["spells"][0]
    assert spell["error"] == "" and spell["stopped_s"] is not None and spell["stopped_s"] > spell["started_s"]
    assert neighbour.on_share(spell["started_s"], window_end) == pytest.approx(1.0)
    assert neighbour.on_share(0.0, spell["started_s"]) == 0.0
    assert not _running(pid), "the neighbour's llama-server outlived the round"


def test_on_share_counts_only_the_spells_inside_the_window() -> None:
    neighbour = ab_neighbour.DecodingNeighbour(binary="llama-server", model="m.gguf")
    neighbour.spells = [ab_neighbour.Spell(10.0, 20.0), ab_neighbour.Spell(30.0, 40.0)]
    assert neighbour.on_share(0.0, 50.0) == pytest.approx(0.4)
    assert neighbour.on_share(15.0, 35.0) == pytest.approx(0.5)
    assert neighbour.on_share(20.0, 30.0) == 0.0
    assert neighbour.on_share(5.0, 5.0) == 0.0


def test_the_report_totals_each_rule_beside_the_neighbour(capsys: pytest.CaptureFixture[str]) -> None:
    import ab_confirmation

    def confirmation(decision: str, share: float) -> dict[str, object]:
        return {"decision": decision, "wall_s": 100.0, "neighbour_on_share": share}

    drift = {
        "ab_aa": [confirmation("none", 0.2), confirmation("held_back", 0.6)],
        "abba_aa": [confirmation("regression", 0.4), confirmation("none", 0.4)],
        "rerun_slow": [confirmation("regression", 0.5)],
    }
    result = {"meta": {"drift_mode": "neighbour", "plan": {}}, "aa": [], "power": {}, "drift": drift}
    ab_confirmation._report_power_and_drift([result])
    out = capsys.readouterr().out
    assert "drift, neighbour (interleaved A/B, A/A): 0 of 2 called a regression (1 held back by contention)" in out
    assert "neighbour on 40% of the time" in out
    assert "drift, neighbour (run-level ABBA, A/A): 1 of 2 called a regression" in out
    assert "drift, neighbour (re-run rule, slow): 1 of 1 called a regression" in out


def test_the_noise_report_gives_the_blocks_at_the_sample_sd_and_at_the_sizing_sd(
    capsys: pytest.CaptureFixture[str],
) -> None:
    import ab_confirmation

    from leaderboard.regressions.ab_power import blocks_needed, pooled_block_noise

    def block(ratio: float) -> dict[str, object]:
        return {"sides": ["a", "b"], "decode_tokens_per_s": [50.0, 50.0 * ratio]}

    ratios = [1.03, 0.97, 1.01, 0.99, 1.02, 0.98]
    check = {"decision": "none", "design": "interleaved", "blocks": [block(r) for r in ratios]}
    result = {"meta": {"plan": {"alpha": 0.01}}, "aa": [check], "power": {}, "drift": {}}
    ab_confirmation._report_noise([result], ["set_aa"])
    out = capsys.readouterr().out
    noise = pooled_block_noise([[math.log(r) for r in ratios]])
    assert noise is not None and noise.sizing_sd_pct() > noise.sd_pct
    sample = blocks_needed(noise.sd_pct, 2.0, alpha=0.01, threshold_pct=1.5, cap=200)
    upper = blocks_needed(noise.sizing_sd_pct(), 2.0, alpha=0.01, threshold_pct=1.5, cap=200)
    assert sample is not None and upper is not None and upper > sample
    assert f"block SD {noise.sd_pct:.2f}% (pooled sample SD of 6 blocks from 1 A/A checks)" in out
    assert f"2% needs {sample} blocks ({upper} sized on {noise.sizing_sd_pct():.2f}%" in out

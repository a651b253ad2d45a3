"""The memory-bandwidth bound on the pages (issue 38): the run page's sentence, the
leaderboard's gauge cell, the outlier note on a run and its rig page, /estimate/."""

from __future__ import annotations

import json
import re
import statistics

import pytest
from django.test import Client

from leaderboard.results.models import Run

pytestmark = pytest.mark.django_db

# One token reads both blocks and the output projection (1.0 GB); the input
# embedding is not read per token (the file has its own output.weight).
HEADER = {
    "tensor_bytes": 1_300_000_000,
    "block_count": 2,
    "block_tensor_bytes": {"attn_q.weight": [100_000_000] * 2, "ffn_up.weight": [300_000_000] * 2},
    "other_tensor_bytes": {"token_embd.weight": 300_000_000, "output.weight": 200_000_000},
}
BOUND_3090 = 936e9 / 1.0e9


def measured(board_run, *, rig: str, tps: list[float], model: str = "Dense-8B") -> Run:
    return board_run(
        rig=rig,
        gpus=[("RTX 3090", 1)],
        model=model,
        quant="Q8_0",
        architecture="dense",
        spec="none",
        draft=None,
        tps=tps,
        run={"fingerprint": {"model": {"gguf": HEADER}}},
    )


def test_the_run_page_says_its_share_of_the_bound(client: Client, board_run) -> None:
    run = measured(board_run, rig="rig-a", tps=[700.0, 702.0])
    html = client.get(f"/runs/{run.pk}/").text
    share = statistics.mean([700.0, 702.0]) / BOUND_3090 * 100
    assert f"Decode at {share:.0f}% of this rig's memory-bandwidth bound (936 GB/s, 1.0 GB read per token)" in html
    assert "the GGUF file&#x27;s tensor table" in html


def test_the_leaderboard_has_a_gauge_cell_per_row(client: Client, board_run) -> None:
    run = measured(board_run, rig="rig-a", tps=[468.0])
    html = client.get("/").text
    cell = re.search(r'<td class="num opt col-bound">(.*?)</td>', html, re.S)
    assert cell is not None and ">50%<" in cell.group(1)
    assert f'title="Run #{run.pk}"' in html


def test_a_speculative_run_past_the_bound_shows_bytes_per_accepted_token(client: Client, board_run) -> None:
    run = board_run(gpus=[("RTX 3090", 1)], spec="mtp", tps=[1872.0], run={"fingerprint": {"model": {"gguf": HEADER}}})
    html = client.get(f"/runs/{run.pk}/").text
    assert "Speculative decoding passes the single-token memory-bandwidth bound" in html
    assert "at most 0.50 GB can have been read per accepted token" in html  # 936 GB/s ÷ 1872 t/s
    assert "200% of this rig" not in html


def test_a_run_far_below_its_peers_is_noted_on_its_page_and_its_rig_page(client: Client, board_run) -> None:
    for i in range(10):
        measured(board_run, rig=f"peer-{i}", tps=[720.0 + 5 * i])
    slow = measured(board_run, rig="slow-rig", tps=[280.0])
    # Ten peers: the 80% interval runs from the lowest to the highest share (k = ⌊0.1 × 11⌋ = 1).
    low, high, mine = 720 / BOUND_3090 * 100, 765 / BOUND_3090 * 100, 280 / BOUND_3090 * 100
    expected = f"reach {low:.0f}–{high:.0f}% of their bound; this run {mine:.0f}%: check its offload and threads"
    assert expected in client.get(f"/runs/{slow.pk}/").text
    rig_page = client.get(f"/rigs/{slow.rig_id}/").text
    assert expected in rig_page and f'href="/runs/{slow.pk}/"' in rig_page
    fine = Run.objects.filter(rig__name="peer-3").get()
    assert "check its offload" not in client.get(f"/runs/{fine.pk}/").text


def test_the_estimate_page_gives_an_interval_labelled_estimate(client: Client, board_run) -> None:
    runs = [measured(board_run, rig=f"peer-{i}", tps=[600.0 + 20 * i]) for i in range(10)]
    response = client.get("/estimate/", {"gpu": "RTX 3090 Ti", "model": runs[0].model_file_id})
    assert response.status_code == 200
    html = response.text
    bound = 1008e9 / 1.0e9
    shares = sorted((600.0 + 20 * i) / BOUND_3090 for i in range(10))
    assert f"{bound * statistics.median(shares):.1f} t/s</strong>, 80% interval" in html
    assert f"{bound * shares[0]:.1f}–{bound * shares[-1]:.1f} t/s" in html  # k = ⌊0.1 × 11⌋ = 1
    assert "estimate, not measured" in html
    # An estimate is never ranked: the leaderboard holds the ten measured runs only.
    assert json.loads(b"".join(client.get("/leaderboard.json").streaming_content))["meta"]["total"] == 10


@pytest.mark.parametrize(
    ("params", "field"),
    [({"gpu": "RTX 9999", "model": "1"}, "gpu"), ({"gpu": "RTX 3090", "model": "x"}, "model"),
     ({"gpu": "RTX 3090", "model": "99999"}, "model"), ({"gpu": "RTX 3090", "model": "1", "engine": "nope"}, "engine")],
)  # fmt: skip
def test_a_bad_estimate_query_is_a_400_naming_the_field(client: Client, params: dict[str, str], field: str) -> None:
    response = client.get("/estimate/", params)
    assert response.status_code == 400
    assert f'data-field="{field}"' in response.text and f"{field}: " in response.text


def test_the_compare_page_gives_each_run_its_share_of_the_bound(client: Client, board_run) -> None:
    a = measured(board_run, rig="rig-a", tps=[468.0])
    b = measured(board_run, rig="rig-b", tps=[702.0])
    html = client.get(f"/compare/?runs={a.pk},{b.pk}").text
    assert re.findall(r">(\d+)%</span> of bound", html) == ["50", "75"]


@pytest.mark.parametrize(("tps", "said"), [(468.0, "50%"), (900.0, "96%")])
def test_a_campaign_gives_each_trial_its_share_and_says_what_its_best_leaves_to_find(
    client: Client, board_run, tps: float, said: str
) -> None:
    from leaderboard.campaigns.models import Campaign, Trial

    slow, best = measured(board_run, rig="rig-a", tps=[tps / 2]), measured(board_run, rig="rig-a", tps=[tps])
    spec = {"name": "ngl", "strategy": "grid", "space": {"threads": [1, 2]}, "budget": {"trials": 2},
            "repetitions": 1, "objective": "decode_tokens_per_s"}  # fmt: skip
    campaign = Campaign.objects.create(rig=best.rig, name="ngl", spec=spec, status="finished")
    for number, run in ((1, slow), (2, best)):
        value = run.decode_tokens_per_s_mean
        Trial.objects.create(
            campaign=campaign, number=number, params={"threads": number}, state="complete", value=value, run=run,
            samples=[value],
        )  # fmt: skip

    html = client.get(f"/campaigns/{campaign.pk}/").text

    assert html.count('<span class="bound-share"') == 2 and f">{said}</span>" in html
    headroom = re.search(r'<p class="bound-headroom">(.*?)</p>', html, re.S)
    assert headroom is not None and f"Trial 2 decodes at {said} of this rig" in headroom.group(1)
    assert ("much is left" in headroom.group(1)) == (said == "50%")
    assert ("little is left" in headroom.group(1)) == (said == "96%")

"""The rig page: its own leaderboard (best run per stack) with a bar chart, hardware, history."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from tests.fixtures.boards import figure_in

pytestmark = pytest.mark.django_db


def test_it_ranks_the_best_run_of_each_stack_like_seed_004(client: Client, board_run) -> None:
    mtp = board_run(tps=[249.0, 250.0])
    board_run(tps=[240.0, 241.0])  # same stack, slower: not in the rig leaderboard
    nvfp4 = board_run(
        engine="vllm", build="nightly", model="Nemotron-30B-A3B", quant="NVFP4", spec="none", tps=[182.0, 182.3]
    )
    dense = board_run(model="Qwen3.6-27B-MTP", architecture="dense", tps=[74.2, 74.3])
    board_run(rig="other-rig", tps=[500.0, 501.0])

    html = client.get(f"/rigs/{mtp.rig_id}/").text

    board = html.split("leaderboard</h2>")[1].split("</table>")[0]
    ids = [int(i) for i in re.findall(r'href="/runs/(\d+)/"', board)]
    assert ids == [mtp.pk, nvfp4.pk, dense.pk]
    assert "35B MoE-A3B + MTP" in board and "35B dense + MTP" in board
    bars = figure_in(html, "rig-bars")
    assert bars["data"][0]["x"] == pytest.approx([249.5, 182.15, 74.25])


def test_it_shows_the_hardware_and_the_history(client: Client, board_run) -> None:
    first = board_run(rig="six-3090s", gpus=[("RTX 3090", 6)], tps=[46.0, 46.5])
    second = board_run(rig="six-3090s", tps=[45.0, 45.5], ctx=262144)

    html = client.get(f"/rigs/{first.rig_id}/").text

    assert "6× " in html and "RTX 3090" in html and "Intel Core Ultra 9 275HX" in html
    history = html.split("History</h2>")[1]
    assert [int(i) for i in re.findall(r'href="/runs/(\d+)/"', history)] == [second.pk, first.pk]


def test_an_unknown_rig_is_a_404(client: Client, db) -> None:
    assert client.get("/rigs/424242/").status_code == 404


def test_the_dual_3090_rig_page_shows_each_note_once(client: Client, db) -> None:
    # Its two reports describe the rig with the same five sentences and one of their own.
    from leaderboard.results.models import Rig
    from leaderboard.results.services.published import published_import

    published_import()
    rig = Rig.objects.get(name="AMD 9900X + 192GB DDR5 + two 3090s")
    assert rig.notes.count("Single desktop: AMD 9900X") == 2  # what the import stores

    html = client.get(f"/rigs/{rig.pk}/").text

    notes = html.split('<p class="notes">')[1].split("</p>")[0]
    assert notes.count("Single desktop: AMD 9900X") == 1
    assert notes.count("Build cost: ~$1600 for RAM") == 1
    # Which card ran which report is the runs' own business (their notes say it), not the rig's.
    assert "This result uses" not in notes
    for run in rig.runs.all():
        assert "Card" in run.notes


def test_distinct_sentences_keeps_each_sentence_where_it_first_appears() -> None:
    from leaderboard.boards.templatetags.boards import distinct_sentences

    shared = "Two 3090s, no NVLink. The article does not say which is 'Card 1'."
    assert distinct_sentences(f"{shared} This uses Card 1.\n\n{shared} This uses Card 2.") == (
        f"{shared} This uses Card 1.\n\nThis uses Card 2."
    )
    assert distinct_sentences(f"{shared}\n\n{shared}") == shared
    # Nothing repeated: the notes as written, line breaks and all; e.g. and 3.5 end no sentence.
    untouched = "Qwen3.5 at 4K, e.g. 46 t/s.\nSecond line.\n\n\nAnother note. (Bracketed.)"
    assert distinct_sentences(untouched) == untouched
    assert distinct_sentences("") == "" and distinct_sentences(None) == ""

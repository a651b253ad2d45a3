"""The index pages, linked from the site's header: every GPU model, model file and rig
a visitor may open, each with its finished runs, and the runs with a context sweep to
pick from. A rig awaiting review is listed to its owner and staff only, as on every page."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import User
from django.test import Client

from leaderboard.results.models import ReviewStatus, Rig
from tests.fixtures.boards import sweep_points

pytestmark = pytest.mark.django_db


def rows(html: str, table: str) -> list[list[str]]:
    """Return the body rows of the table with id ``table``, each as its cells' text."""
    body = html.split(f'id="{table}"', 1)[1].split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    return [
        [re.sub(r"<[^>]+>", "", cell).strip() for cell in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
        for row in re.findall(r"<tr>(.*?)</tr>", body, re.S)
    ]


def test_every_index_is_linked_from_the_header(client: Client, board_run) -> None:
    board_run()
    header = client.get("/").text.split('class="site-header"', 1)[1].split("</header>", 1)[0]
    for path in ("/rigs/", "/gpus/", "/models/"):
        assert f'href="{path}"' in header, path
        assert client.get(path).status_code == 200


def test_the_gpu_index_counts_the_runs_each_gpu_page_ranks(client: Client, board_run) -> None:
    board_run(rig="one-3090", gpus=[("RTX 3090", 1)])
    board_run(rig="one-3090", gpus=[("RTX 3090", 1)])
    board_run(rig="mixed", gpus=[("RTX 3090", 1), ("RTX 3090 Ti", 1)])  # on neither GPU's page

    listed = {r[0]: r for r in rows(client.get("/gpus/").text, "gpu-index")}
    # GPU, VRAM, rigs that have it, runs ranked on its page (oracle: the GPU page's own rows).
    assert listed["RTX 3090"][2:] == ["2", "2"] and listed["RTX 3090 Ti"][2:] == ["1", "0"]
    page = client.get("/gpus/RTX 3090/").text
    assert len(re.findall(r'name="runs" value="\d+"', page)) == 2
    assert 'href="/gpus/RTX%203090%20Ti/"' in client.get("/gpus/").text


def test_the_model_and_rig_indexes_link_every_one_with_its_runs(client: Client, board_run) -> None:
    a = board_run(rig="alpha", model="Model-A")
    board_run(rig="alpha", model="Model-A")
    b = board_run(rig="bravo", model="Model-B")

    models = client.get("/models/").text
    assert f'href="/models/{a.model_file_id}/"' in models and f'href="/models/{b.model_file_id}/"' in models
    assert [(r[0], r[-1]) for r in rows(models, "model-index")] == [("Model-A", "2"), ("Model-B", "1")]
    rigs = client.get("/rigs/").text
    assert [(r[0], r[-1]) for r in rows(rigs, "rig-index")] == [("alpha", "2"), ("bravo", "1")]
    assert f'href="/rigs/{a.rig_id}/"' in rigs


def test_a_rig_awaiting_review_is_listed_to_its_owner_only(client: Client, board_run) -> None:
    owner = User.objects.create_user("owner", "o@example.org", "a long enough password 42")
    hidden = board_run(rig="pending-rig", gpus=[("Secret GPU 9000", 1)], model="Secret-Model")
    Rig.objects.filter(pk=hidden.rig_id).update(review_status=ReviewStatus.PENDING, owner=owner)

    for path in ("/rigs/", "/gpus/", "/models/", "/sweeps/"):
        html = client.get(path).text
        assert "pending-rig" not in html and "Secret GPU 9000" not in html and "Secret-Model" not in html, path
    client.force_login(owner)
    assert "pending-rig" in client.get("/rigs/").text and "Secret GPU 9000" in client.get("/gpus/").text


def test_the_sweeps_page_offers_the_runs_with_a_sweep(client: Client, board_run) -> None:
    swept = board_run(sweep=sweep_points())
    plain = board_run()

    html = client.get("/sweeps/").text
    assert f'id="sweep-pick-{swept.pk}"' in html and f'id="sweep-pick-{plain.pk}"' not in html
    assert f"({len(sweep_points())} depths)" in html
    assert 'href="/sweeps/"' in client.get("/models/").text  # reachable from an index

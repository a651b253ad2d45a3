"""GET /api/runs/?cursor=: every public run once, in id order, however many are
added meanwhile (issue 39's bulk read); page numbers still work beside it."""

from __future__ import annotations

import pytest
from django.test import Client

from leaderboard.core.api.pagination import encode_cursor
from leaderboard.results.models import ReviewStatus, Rig, Run

pytestmark = pytest.mark.django_db


def walk(client: Client, url: str) -> tuple[list[str], int]:
    """Return the uuids of every page from ``url`` on, following ``next``, and the pages read."""
    uuids: list[str] = []
    pages = 0
    next_url: str | None = url
    while next_url:
        response = client.get(next_url)
        assert response.status_code == 200, response.content
        body = response.json()
        uuids += [run["uuid"] for run in body["results"]]
        assert (body["next"] is None) == (body["next_cursor"] is None)
        next_url = body["next"]
        pages += 1
    return uuids, pages


@pytest.fixture
def seven_runs(board_run) -> list[Run]:
    return [board_run(tps=[100.0 + i, 101.0 + i], model=f"m-{i}") for i in range(7)]


def test_the_cursor_walks_every_public_run_once_in_id_order(client: Client, seven_runs) -> None:
    hidden = Rig.objects.create(name="pending-rig", review_status=ReviewStatus.PENDING)
    Run.objects.filter(pk=seven_runs[3].pk).update(rig=hidden)
    public = [r for r in seven_runs if r.pk != seven_runs[3].pk]

    uuids, pages = walk(client, "/api/runs/?cursor=&page_size=2")

    assert uuids == [str(r.uuid) for r in sorted(public, key=lambda r: r.pk)]
    assert pages == 3  # 6 runs, 2 a page: the last page says there is no next


def test_runs_added_after_a_cursor_come_on_its_next_page(client: Client, board_run, seven_runs) -> None:
    first = client.get("/api/runs/?cursor=&page_size=7").json()
    assert first["next"] is None  # all seven fit: nothing after them yet
    last = first["results"][-1]["uuid"]
    cursor = encode_cursor(Run.objects.get(uuid=last).pk)

    added = board_run(tps=[50.0, 51.0], model="late")
    later = client.get(f"/api/runs/?cursor={cursor}").json()

    assert [r["uuid"] for r in later["results"]] == [str(added.uuid)]


def test_the_cursor_keeps_the_filters(client: Client, board_run, seven_runs) -> None:
    other = board_run(tps=[20.0, 21.0], rig="other-rig", model="x")

    uuids, _ = walk(client, "/api/runs/?cursor=&page_size=3&rig=other-rig")

    assert uuids == [str(other.uuid)]


def test_page_numbers_still_work(client: Client, seven_runs) -> None:
    body = client.get("/api/runs/?page=2&page_size=3").json()

    assert body["count"] == 7
    assert len(body["results"]) == 3
    assert body["previous"] is not None and body["next"] is not None
    assert "next_cursor" not in body


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("cursor=bm9wZQ", "cursor"),
        ("cursor=%%%", "cursor"),
        (f"cursor={encode_cursor(1)}x", "cursor"),
        ("cursor=&ordering=-decode_tokens_per_s_mean", "ordering"),
        ("cursor=&page=2", "page"),
        ("cursor=&page_size=0", "page_size"),
        ("cursor=&page_size=many", "page_size"),
    ],
)
def test_a_bad_cursor_request_is_a_400_naming_the_field(client: Client, seven_runs, query: str, field: str) -> None:
    response = client.get(f"/api/runs/?{query}")

    assert response.status_code == 400, response.content
    assert field in response.json()["errors"]

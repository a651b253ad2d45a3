"""Conditional GET on the board, its GPU and model pages and its exports
(leaderboard/core/conditional.py): a reload when nothing changed is a 304 with
no body and no query of the page; any write makes the next reload render; a
signed-in viewer never gets an anonymous visitor's validator."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

pytestmark = pytest.mark.django_db(transaction=True)

PAGES = ["/", "/?sort=-decode", "/leaderboard.csv", "/leaderboard.json", "/leaderboard.ndjson"]


def _body(response: Any) -> bytes:
    return b"".join(response.streaming_content) if response.streaming else response.content


@pytest.fixture
def board(make_run: Callable[..., Any]) -> Any:
    return make_run()


@pytest.mark.parametrize("path", PAGES)
def test_a_reload_when_nothing_changed_is_a_304_without_a_query_of_the_page(board: Any, path: str) -> None:
    client = Client()
    first = client.get(path)
    assert first.status_code == 200 and _body(first)
    etag = first["ETag"]
    assert "no-cache" in first["Cache-Control"] and "Cookie" in first["Vary"]

    # The snapshot is the cluster's: a write anywhere in it (autovacuum's ANALYZE of the rows
    # just made, another database) renders afresh. Reload until a reload finds nothing written.
    for _ in range(10):
        with CaptureQueriesContext(connection) as queries:
            again = client.get(path, HTTP_IF_NONE_MATCH=etag)
        if again.status_code == 304:
            break
        etag = again["ETag"]
    assert again.status_code == 304 and not _body(again)
    # The validator's one query (the snapshot), and none of the page's.
    assert [q["sql"] for q in queries.captured_queries] == ["SELECT pg_current_snapshot()::text"]


def test_a_write_makes_the_next_reload_render_with_the_new_figure(board: Any, make_run: Callable[..., Any]) -> None:
    client = Client()
    first = client.get("/leaderboard.csv")
    rows_before = _body(first).count(b"\n")

    make_run(rig=board.rig)

    again = client.get("/leaderboard.csv", HTTP_IF_NONE_MATCH=first["ETag"])
    assert again.status_code == 200 and again["ETag"] != first["ETag"]
    assert _body(again).count(b"\n") == rows_before + 1


def test_the_gpu_page_and_another_query_have_their_own_validators(board: Any) -> None:
    client = Client()
    etags = {path: client.get(path)["ETag"] for path in ("/", "/?sort=-decode", "/leaderboard.csv")}
    assert len(set(etags.values())) == 3


def test_a_signed_in_viewer_is_not_answered_with_an_anonymous_validator(board: Any) -> None:
    anonymous = Client().get("/")
    user = get_user_model().objects.create_user("owner", "owner@example.com", "pw-owner-1234")
    signed_in = Client()
    signed_in.force_login(user)

    answer = signed_in.get("/", HTTP_IF_NONE_MATCH=anonymous["ETag"])

    assert answer.status_code == 200 and answer["ETag"] != anonymous["ETag"]
    assert "private" in answer["Cache-Control"]


def test_a_refused_filter_is_not_given_a_validator(board: Any) -> None:
    refused = Client().get("/leaderboard.csv", {"spec": "warp-drive"})
    assert refused.status_code == 400 and not refused.has_header("ETag")


@pytest.mark.parametrize("transaction_kind", ["committed", "inside one transaction"])
def test_the_kept_workload_counts_are_never_older_than_the_data(
    board: Any, make_run: Callable[..., Any], transaction_kind: str
) -> None:
    """The leaderboard's workload counts and menus are kept until the snapshot moves
    (leaderboard/core/datacache.py): a run written since, committed or in the reader's
    own transaction, is counted on the next page."""
    import re

    from django.db import transaction

    def counted(client: Client) -> int:
        html = client.get("/").content.decode()
        return int(re.search(r"\((\d+) runs?\)", html).group(1))

    other = {"name": "other-workload", "version": "1", "max_tokens": 64, "repetitions": 3}
    make_run(rig=board.rig, workload=other)  # two workloads: the page names the ranked one's count
    make_run(rig=board.rig)
    client = Client()
    before = counted(client)
    assert before == 2 and counted(client) == before  # kept: the same snapshot
    if transaction_kind == "committed":
        make_run(rig=board.rig)
        assert counted(client) == before + 1
    else:
        with transaction.atomic():
            make_run(rig=board.rig)
            assert counted(client) == before + 1
            make_run(rig=board.rig)
            assert counted(client) == before + 2

"""The nightly timelines are linked from the leaderboard (the row of each run
a nightly build made) and from the rig page (one link per reference config),
and the links resolve."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from django.core.cache import cache
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from leaderboard.regressions.models import ReferenceConfig
from leaderboard.results.models import Run

pytestmark = pytest.mark.django_db

BASE = [100.0, 101.0, 99.0, 100.5, 99.5]


def _nightly_links(html: str) -> list[str]:
    return re.findall(r'<a class="nightly-link" href="([^"]+)"', html)


def test_a_nightly_builds_run_links_its_timeline_on_the_leaderboard(
    nightly_setup: Callable[..., Any], board_run: Callable[..., Run], client: Client
) -> None:
    sub, ref, make_build = nightly_setup(alert_emails="", webhook_url="")
    make_build("a", BASE)
    board_run(rig="plain-rig", tps=[50.0, 51.0])  # no nightly build made it: no link

    html = client.get("/").content.decode()

    assert _nightly_links(html) == [f"/regressions/{sub.pk}/{ref.pk}/"]
    assert client.get(_nightly_links(html)[0]).status_code == 200
    assert 'href="/regressions/">Nightly</a>' in html  # and the site's navigation


def test_the_rig_page_links_each_reference_configs_timeline(
    nightly_setup: Callable[..., Any], board_run: Callable[..., Run], client: Client
) -> None:
    sub, ref, make_build = nightly_setup(alert_emails="", webhook_url="")
    other = ReferenceConfig.objects.create(subscription=sub, name="gemma prefill", spec={})
    make_build("a", BASE)

    html = client.get(f"/rigs/{sub.rig_id}/").content.decode()

    section = html.split("<h2>Nightly builds</h2>")[1].split("<h2>")[0]
    hrefs = re.findall(r'href="(/regressions/\d+/\d+/)"', section)
    assert hrefs == [f"/regressions/{sub.pk}/{ref.pk}/", f"/regressions/{sub.pk}/{other.pk}/"]  # by name
    assert "gemma &lt;decode&gt; &amp; co" in section  # names are escaped
    assert all(client.get(href).status_code == 200 for href in hrefs)
    plain = board_run(rig="plain-rig", tps=[50.0, 51.0])
    assert "Nightly builds" not in client.get(f"/rigs/{plain.rig_id}/").content.decode()


def test_the_links_cost_one_query_whatever_the_number_of_nightly_runs(
    nightly_setup: Callable[..., Any], client: Client
) -> None:
    _, _, make_build = nightly_setup(alert_emails="", webhook_url="")

    def leaderboard_queries() -> int:
        cache.clear()  # the cold page: its menus and workload counts read afresh (core/datacache.py)
        with CaptureQueriesContext(connection) as captured:
            assert client.get("/?per_page=50").status_code == 200
        return len(captured)

    make_build("a", BASE)
    one = leaderboard_queries()
    for char in "bcdef":
        make_build(char, BASE)
    html = client.get("/?per_page=50").content.decode()

    assert len(_nightly_links(html)) == 6
    assert leaderboard_queries() == one


def test_the_links_query_sorts_nothing(nightly_setup: Callable[..., Any], client: Client) -> None:
    # BuildRun's default ordering (five joined tables) made each of the two subqueries a
    # join and a sort per row: 9 ms of planning on every board page at 100k runs (issue 40).
    from leaderboard.regressions.selectors import timeline_links_for_runs

    _, _, make_build = nightly_setup(alert_emails="", webhook_url="")
    make_build("a", BASE)
    run_ids = list(Run.objects.values_list("pk", flat=True))
    with CaptureQueriesContext(connection) as captured:
        links = timeline_links_for_runs(run_ids=run_ids)

    assert len(links) == 1 and len(captured) == 1
    assert "ORDER BY" not in captured[0]["sql"]


def test_the_compiled_links_agree_with_the_orm_in_one_sql_text(
    nightly_setup: Callable[..., Any], board_run: Callable[..., Run]
) -> None:
    # timeline_links_for_runs is compiled once per connection (results/speedups/compiled.py);
    # timeline_links_for_runs_orm is its plain reference.
    from leaderboard.regressions.selectors import timeline_links_for_runs, timeline_links_for_runs_orm

    sub, ref, make_build = nightly_setup(alert_emails="", webhook_url="")
    other_sub, other_ref, make_other_build = nightly_setup(alert_emails="", webhook_url="", rig_name="other-rig")
    make_build("a", BASE)
    make_other_build("b", BASE)
    plain_run = board_run(rig="plain-rig", tps=[50.0, 51.0])
    nightly_ids = list(Run.objects.exclude(pk=plain_run.pk).order_by("pk").values_list("pk", flat=True))
    unknown = plain_run.pk + 1000
    ids = [plain_run.pk, *nightly_ids, unknown, nightly_ids[0]]

    plain = timeline_links_for_runs_orm(run_ids=ids)
    with CaptureQueriesContext(connection) as many:
        fast = timeline_links_for_runs(run_ids=ids)
    with CaptureQueriesContext(connection) as one:
        timeline_links_for_runs(run_ids=ids[:1])

    assert fast == plain
    # The cases the set was made for are in it, so agreeing means something.
    assert {(link.subscription_id, link.reference_id) for link in plain.values()} == {
        (sub.pk, ref.pk),
        (other_sub.pk, other_ref.pk),
    }
    assert set(plain) == set(nightly_ids) and plain_run.pk not in plain
    assert len(one) == len(many) == 1 and "= ANY(" in many[0]["sql"]
    assert one[0]["sql"].partition("ANY(")[0] == many[0]["sql"].partition("ANY(")[0]

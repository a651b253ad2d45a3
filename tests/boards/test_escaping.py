"""User strings (rig, model, notes) are escaped in HTML and in chart hover text."""

from __future__ import annotations

import json
import re

import pytest
from django.test import Client

from tests.fixtures.boards import sweep_points

pytestmark = pytest.mark.django_db

EVIL = "<script>alert(1)</script>"
UNICODE = "Rïg ☃ 日本語 🚀"


def page_url(page: str, first, second) -> str:
    """Return the URL of ``page`` showing ``first`` (and ``second`` where a page shows two runs)."""
    return {
        "leaderboard": "/",
        "rig": f"/rigs/{first.rig_id}/",
        "run": f"/runs/{first.pk}/",
        "compare": f"/compare/?runs={first.pk},{second.pk}",
        "sweeps": f"/sweeps/?runs={first.pk},{second.pk}",
    }[page]


def figures_in(html: str) -> list[dict]:
    return [json.loads(m) for m in re.findall(r'<script id="[^"]+" type="application/json">(.*?)</script>', html, re.S)]


@pytest.fixture
def evil_runs(board_run):
    first = board_run(
        rig=EVIL,
        model=f"{EVIL}-model",
        sweep=sweep_points(),
        tps=[10.0, 12.0, 11.0],
        run={"notes": EVIL, "server_log_tail": EVIL},
    )
    second = board_run(rig=UNICODE, model="Qwen ☃", tps=[20.0, 21.0, 22.0], sweep=sweep_points())
    return first, second


@pytest.mark.parametrize("page", ["leaderboard", "rig", "run", "compare", "sweeps"])
def test_no_page_carries_a_user_script_tag(client: Client, evil_runs, page: str) -> None:
    first, second = evil_runs
    html = client.get(page_url(page, first, second)).text

    assert EVIL not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


@pytest.mark.parametrize("page", ["rig", "run", "compare"])
def test_chart_text_is_escaped_for_plotly(client: Client, evil_runs, page: str) -> None:
    first, second = evil_runs
    figures = figures_in(client.get(page_url(page, first, second)).text)

    assert figures
    blob = json.dumps(figures)
    # Plotly renders names, hover text and tick labels as HTML: none may hold a raw tag.
    assert "<script" not in blob
    assert "&lt;script&gt;" in blob


def test_unicode_names_survive_intact(client: Client, evil_runs) -> None:
    _, second = evil_runs

    html = client.get("/").text
    rig_html = client.get(f"/rigs/{second.rig_id}/").text

    assert UNICODE in html
    assert UNICODE in rig_html


def test_a_javascript_source_url_is_not_linked(client: Client, reported_run) -> None:
    from leaderboard.results.models import Source

    reported_run()
    Source.objects.update(url="javascript:alert(1)")

    html = client.get("/").text

    assert "javascript:alert(1)" not in html


LINK = '<a href="//evil.example">E</a>'


@pytest.fixture
def linked_runs(board_run):
    points = sweep_points()
    points[0]["ctx_label"] = LINK
    first = board_run(rig='rig "quoted" & co', model=f"{LINK}-model", sweep=points, tps=[10.0, 12.0, 11.0])
    second = board_run(rig="plain-rig", tps=[20.0, 21.0, 22.0], sweep=sweep_points())
    return first, second


@pytest.mark.parametrize("page", ["run", "sweeps", "compare", "rig"])
def test_a_label_cannot_put_a_live_link_in_a_chart_and_is_escaped_once(client: Client, linked_runs, page: str) -> None:
    first, second = linked_runs
    blob = json.dumps(figures_in(client.get(page_url(page, first, second)).text))

    assert blob != "[]"
    # Plotly turns <a href> in any label, legend, tick or hover text into a link.
    assert "<a " not in blob and 'evil.example\\">' not in blob
    assert "&lt;a href=" in blob
    # Escaped once: Plotly shows &quot; and &amp;amp; literally.
    assert "&quot;" not in blob and "&amp;amp;" not in blob and "&amp;lt;" not in blob
    if page in ("run", "compare"):  # charts named by the run's label, which holds the rig's name
        assert '\\"quoted\\" &amp; co' in blob

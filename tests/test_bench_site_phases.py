"""benchmarks/site_phases.py's accounting (issue 40): each phase it prints is what it
says. A template's figure is its own rendering, its includes' time taken off (so the
templates' figures add up to the page's rendering, not more), the driver's figures
are the cursor's, and a wrapped function counts once a call. (The script prints
figures; this does not time anything against a clock.)"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from django.test import Client

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import site_phases  # noqa: E402

from tests.boards.test_query_counts import make_runs  # noqa: E402

pytestmark = pytest.mark.django_db


def put_undone(monkeypatch: pytest.MonkeyPatch):
    # The driver's fetch methods are not on Django's cursor class until install puts them there.
    return lambda target, name, value: monkeypatch.setattr(target, name, value, raising=False)


def test_the_templates_own_times_add_up_to_the_pages_rendering(
    client: Client, board_run, reported_run, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_runs(board_run, reported_run, 6)
    phases = site_phases.Phases()
    site_phases.install(
        phases,
        ["leaderboard.boards.selectors.leaderboard.rows_by_ids", "leaderboard.boards.views.render"],
        put=put_undone(monkeypatch),
    )
    page = site_phases.measure(client, "/", phases, iterations=3, warmup=1)

    calls = page["calls_per_request"]
    assert calls["rows_by_ids"] == 1 and calls["render"] == 1
    # The board nests four templates deep (base, leaderboard, _board, _chart).
    for name in ("base.html", "boards/leaderboard.html", "boards/_board.html", "boards/_chart.html"):
        assert f"template {name}" in page["phases_ms"], name
    own = sum(ms for name, ms in page["phases_ms"].items() if name.startswith("template "))
    rendering = page["phases_ms"]["render"]
    # Counted inclusively, base.html alone would hold the whole rendering and the sum
    # would be about twice it; own times leave only the timers' overhead over it.
    assert 0.6 * rendering <= own <= rendering * 1.02 + 0.05
    assert page["phases_ms"]["sql: execute"] > 0 and page["phases_ms"]["sql: fetch"] > 0
    assert 0 < page["rest_ms"] < page["cpu_mean_ms"]


def test_install_leaves_nothing_behind_once_undone(monkeypatch: pytest.MonkeyPatch) -> None:
    from django.db.backends import utils
    from django.template import base

    plain = (utils.CursorWrapper.execute, base.Template._render)
    with monkeypatch.context() as patched:
        site_phases.install(site_phases.Phases(), [], put=put_undone(patched))
        assert utils.CursorWrapper.execute is not plain[0] and "fetchmany" in vars(utils.CursorWrapper)
    assert (utils.CursorWrapper.execute, base.Template._render) == plain
    assert "fetchmany" not in vars(utils.CursorWrapper)

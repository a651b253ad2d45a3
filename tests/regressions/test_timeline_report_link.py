"""A regression on a nightly timeline links to its report (where it reproduces, how to
reproduce it): the ▼ is the way from the timeline to the report."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client

from leaderboard.regressions.models import Verdict
from leaderboard.regressions.services.builds import build_report_record
from tests.regressions.test_timeline_page import BASE, _report

pytestmark = pytest.mark.django_db


def test_the_timelines_regression_marker_links_to_its_report(nightly_setup: Callable[..., Any], client: Client) -> None:
    sub, ref, make_build = nightly_setup(alert_emails="", webhook_url="")
    for char, samples in (("a", BASE), ("c", [v * 0.9 for v in BASE])):
        build_report_record(report=_report(make_build(char, samples, status="built"), "built"))
    verdict = Verdict.objects.get(build__subscription=sub, kind="regression")

    html = client.get(f"/regressions/{sub.pk}/{ref.pk}/").content.decode()

    marker = html.split('class="marker-regression"', 1)[1].split("</strong>", 1)[0]
    assert f'<a href="/regressions/report/{verdict.pk}/"' in marker and "▼ regression" in marker
    assert client.get(f"/regressions/report/{verdict.pk}/").status_code == 200


def test_the_matrix_names_its_regressions_above_the_table(nightly_setup: Callable[..., Any], client: Client) -> None:
    """On a phone the matrix shows one rig column: its regressions are named (and linked)
    above the table, and the table says it scrolls sideways."""
    sub, ref, make_build = nightly_setup(alert_emails="", webhook_url="")
    for char, samples in (("a", BASE), ("c", [v * 0.9 for v in BASE])):
        build_report_record(report=_report(make_build(char, samples, status="built"), "built"))
    html = client.get(f"/regressions/matrix/?repo={sub.repo_url}&branch={sub.branch}").content.decode()
    summary = html.split('id="matrix-regressions"', 1)[1].split("</p>", 1)[0]
    assert html.index('id="matrix-regressions"') < html.index('<table class="matrix">')
    assert "<code>ccccccc</code> on " in summary and sub.rig.name in summary and "<a href=" in summary

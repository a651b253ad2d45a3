"""Builds are compared by one decode figure whatever llama-server's version.

llama-server's ``predicted_per_second`` counted the first token over the
intervals after it up to b10405 (n tokens over n - 1 gaps: x 64/63 at 64
tokens) and no longer does from b10423 (PR #26920). Two runs that decode at the
same speed, one from each side of that release, differ by 1.6% in the server's
figure and not at all in the client's stopwatch; the chain (verdicts, the
timeline, the report) compares the client's. Runs are ingested through the
real run_create."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client

from leaderboard.regressions.services.builds import build_report_record
from runners import stats
from runners.harness.measure import Sample

pytestmark = pytest.mark.django_db(transaction=True)

CLIENT = [100.0, 100.1, 99.9, 100.05, 99.95, 100.02, 99.98, 100.01, 99.99, 100.03]
OLD_SERVER = [v * 64 / 63 for v in CLIENT]  # up to b10405: 64 tokens over 63 intervals
NEW_SERVER = list(CLIENT)  # from b10423: the intervals' own rate


def _report(build: Any) -> dict[str, Any]:
    runs = [{"build_run_id": br.pk, "status": "finished", "error": ""} for br in build.build_runs.all()]
    return {"build_id": build.pk, "status": "built", "error": "", "build": {"build_time_s": 1.0}, "runs": runs}


def test_the_build_figure_is_the_clients_and_the_servers_only_without_one() -> None:
    assert stats.build_decode_tokens_per_s(server=101.6, client=100.0) == 100.0
    assert stats.build_decode_tokens_per_s(server=101.6, client=None) == 101.6
    assert stats.build_decode_tokens_per_s(server=None, client=None) is None
    # The board's figure stays the server's: only the comparison of builds changes.
    assert stats.decode_tokens_per_s(server=101.6, client=100.0) == 101.6
    sample = Sample(index=1, decode_tokens_per_s_server=101.6, decode_tokens_per_s_client=100.0)
    assert (sample.build_decode_tokens_per_s, sample.decode_tokens_per_s) == (100.0, 101.6)


def test_a_release_whose_server_counts_differently_is_no_change_by_the_clients_figure(
    nightly_setup: Callable[..., Any], client: Client
) -> None:
    # A 1% threshold: the server figures' 1.6% apart would be a regression (the samples are tight).
    sub, ref, make_build = nightly_setup(alert_emails="", webhook_url="", threshold_pct=1.0)
    build_report_record(report=_report(make_build("a", OLD_SERVER, client_samples=CLIENT)))
    _, (verdict,) = build_report_record(report=_report(make_build("b", NEW_SERVER, client_samples=CLIENT)))

    assert verdict.kind == "none", verdict.reason
    assert verdict.effect_pct == pytest.approx(0.0, abs=0.01)
    assert verdict.new_median == pytest.approx(100.0, abs=0.01)
    assert verdict.baseline_median == pytest.approx(100.0, abs=0.01)
    # The timeline shows the figure the verdict compared, for both builds: the client's mean.
    html = client.get(f"/regressions/{sub.pk}/{ref.pk}/").content.decode()
    assert html.count(">100.00</a>") == 2, html
    assert "101.59" not in html


def test_the_same_runs_by_the_servers_figure_alone_are_a_regression(nightly_setup: Callable[..., Any]) -> None:
    """The negative check's twin: without a client figure the chain falls back to the
    server's, and the counting change reads as a slowdown, so the test above can fail."""
    _, _, make_build = nightly_setup(alert_emails="", webhook_url="", threshold_pct=1.0)
    build_report_record(report=_report(make_build("a", OLD_SERVER)))
    _, (verdict,) = build_report_record(report=_report(make_build("b", NEW_SERVER)))

    assert verdict.kind == "regression", verdict.reason
    assert verdict.effect_pct == pytest.approx(-100 / 64, abs=0.01)

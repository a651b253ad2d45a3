"""A verdict in words (words.py): the matrix, the timeline, the report and the
alert say how the same verdict stands in the same words, because all four
take them from the one presenter. Each state is set on one real regression
verdict (judged through the real build report), every page is rendered, and
the words of the *other* states are checked absent, so the check can fail."""

from __future__ import annotations

import html as html_lib
from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

import pytest
from django.test import Client

from leaderboard.regressions.models import Verdict
from leaderboard.regressions.services.alerts import alert_message
from leaderboard.regressions.services.builds import build_report_record
from leaderboard.regressions.states import Confirmation
from leaderboard.regressions.words import verdict_words

pytestmark = pytest.mark.django_db(transaction=True)

BASE = [100.0, 101.0, 99.0, 100.5, 99.5, 100.2, 99.8, 100.1, 99.9, 100.3]
# Each state a standing regression can be in, with the figures its words quote.
STATES = {
    Confirmation.NOT_ASKED: {},
    Confirmation.CONFIRMED: {"confirm_effect_pct": -4.8},
    Confirmation.UNCHECKED: {},
    Confirmation.AB_CONFIRMED: {"ab_n_pairs": 4, "ab_effect_pct": -9.7, "ab_p_value": 0.001},
}


def _report(build: Any) -> dict[str, Any]:
    runs = [{"build_run_id": br.pk, "status": "finished", "error": ""} for br in build.build_runs.all()]
    return {"build_id": build.pk, "status": "built", "build": {"build_time_s": 1.0}, "runs": runs}


def _pages(client: Client, verdict: Verdict) -> dict[str, str]:
    sub = verdict.build.subscription
    matrix = client.get("/regressions/matrix/?" + urlencode({"repo": sub.repo_url, "branch": sub.branch}))
    timeline = client.get(f"/regressions/{sub.pk}/{verdict.reference_config_id}/")
    report = client.get(f"/regressions/report/{verdict.pk}/")
    assert matrix.status_code == timeline.status_code == report.status_code == 200
    return {
        "matrix": html_lib.unescape(matrix.content.decode()),
        "timeline": html_lib.unescape(timeline.content.decode()),
        "report": html_lib.unescape(report.content.decode()),
        "alert": alert_message(verdict),
    }


def test_the_same_verdict_gives_the_same_words_on_the_matrix_timeline_report_and_alert(
    nightly_setup: Callable[..., Any], client: Client, settings: Any
) -> None:
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    _, _, make_build = nightly_setup(webhook_url="", alert_emails="")
    build_report_record(report=_report(make_build("a", BASE)))
    _, (verdict,) = build_report_record(report=_report(make_build("b", [v * 0.9 for v in BASE])))
    assert verdict.kind == "regression"

    said = {}
    for state, figures in STATES.items():
        Verdict.objects.filter(pk=verdict.pk).update(confirmation=state, **figures)
        verdict.refresh_from_db()
        words = verdict_words(verdict)
        pages = _pages(client, verdict)
        if words.standing:
            assert words.standing in pages["matrix"] and words.standing in pages["timeline"], state
        assert words.source in pages["matrix"], state
        assert words.answer == "reproduces" and f"<td>{words.answer}</td>" in pages["report"], state
        if words.evidence:
            assert words.evidence in pages["alert"], state
        said[state] = (words, pages)

    # Different states say different things, and no page says another state's words.
    standings = {s: w.standing for s, (w, _) in said.items() if w.standing}
    assert len(set(standings.values())) == len(standings) == 3
    for state, (_, pages) in said.items():
        for other, text in standings.items():
            if other != state:
                assert text not in pages["matrix"] and text not in pages["timeline"], (state, other)
        evidences = [w.evidence for s, (w, _) in said.items() if s != state and w.evidence]
        assert not any(e in pages["alert"] for e in evidences), state

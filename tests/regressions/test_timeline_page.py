"""The timeline page: figures per build, verdict markers, failed builds as
gaps, user text escaped."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client

from leaderboard.regressions.services.builds import build_report_record

pytestmark = pytest.mark.django_db(transaction=True)

BASE = [100.0, 101.0, 99.0, 100.5, 99.5, 100.2, 99.8, 100.1, 99.9, 100.3]


def _report(build: Any, status: str = "built") -> dict[str, Any]:
    return {
        "build_id": build.pk,
        "status": status,
        "build": {"build_time_s": 12.0, "log_tail": "boom" if status == "failed" else ""},
        "runs": [],
    }


def _figure(html: str, element_id: str) -> dict[str, Any]:
    start = html.index(f'<script id="{element_id}" type="application/json">') + len(
        f'<script id="{element_id}" type="application/json">'
    )
    return json.loads(html[start : html.index("</script>", start)])


def test_the_timeline_shows_each_build_with_markers_gaps_and_escaped_names(
    nightly_setup: Callable[..., Any], client: Client
) -> None:
    sub, ref, make_build = nightly_setup(rig_name="<b>rig</b>", alert_emails="", webhook_url="")
    for char, samples, status in (
        ("a", BASE, "built"),
        ("b", [], "failed"),
        ("c", [v * 0.9 for v in BASE], "built"),
        ("d", [v * 1.0 for v in BASE], "built"),
    ):
        build_report_record(report=_report(make_build(char, samples, status=status), status))

    response = client.get(f"/regressions/{sub.pk}/{ref.pk}/")

    assert response.status_code == 200
    html = response.content.decode()
    assert "&lt;b&gt;rig&lt;/b&gt;" in html and "<b>rig</b>" not in html
    assert "gemma &lt;decode&gt; &amp; co" in html
    assert "▼ regression" in html and "build failed" in html
    decode = _figure(html, "timeline-decode")
    line = next(t for t in decode["data"] if t.get("name") == "Decode (t/s)")
    assert line["x"] == ["a" * 10, "b" * 10, "c" * 10, "d" * 10]
    assert line["y"][1] is None and line["connectgaps"] is False
    assert line["y"][0] == pytest.approx(sum(BASE) / 10)
    marker = next(t for t in decode["data"] if t.get("name") == "regression")
    assert marker["x"] == ["c" * 10]
    band = next(t for t in decode["data"] if t.get("name") == "95% CI")
    assert band["fill"] == "tonexty" and band["y"][0] < line["y"][0]
    assert any(a["text"] == "build failed" for a in decode["layout"]["annotations"])
    for element_id in ("timeline-prefill", "timeline-ttft", "timeline-power"):
        assert f'id="{element_id}"' in html


def test_the_index_links_each_reference_config_and_an_unknown_pair_is_404(
    nightly_setup: Callable[..., Any], client: Client
) -> None:
    sub, ref, _ = nightly_setup()
    html = client.get("/regressions/").content.decode()
    assert f'href="/regressions/{sub.pk}/{ref.pk}/"' in html
    assert client.get(f"/regressions/{sub.pk}/{ref.pk + 999}/").status_code == 404

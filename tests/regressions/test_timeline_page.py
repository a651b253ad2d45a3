"""The timeline page: figures per build, verdict markers, failed builds as
gaps, user text escaped."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client
from scipy import stats as scipy_stats

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
    assert band["fill"] == "toself" and band["y"][0] > line["y"][0] > band["y"][1]
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


def _ci_cells(html: str) -> dict[str, tuple[float, float] | None]:
    """Return the builds table's 95% CI column by short commit, as the page prints it."""
    body = html[html.index('<table class="rows timeline-builds">') :]
    out: dict[str, tuple[float, float] | None] = {}
    for row in re.findall(r"<tr[^>]*>(.*?)</tr>", body[: body.index("</table>")], flags=re.S):
        cells = [re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", row, flags=re.S)]
        if not cells:
            continue  # the heading row
        low, _, high = cells[3].partition("–")
        out[cells[0]] = (float(low), float(high)) if high else None
    return out


def test_the_ci_band_is_drawn_against_each_builds_own_interval_and_never_across_a_failed_build(
    nightly_setup: Callable[..., Any], client: Client
) -> None:
    """A built, b failed, c and d built: the band is a's interval alone, then one shape
    over c and d; every bar is its build's CI as the table prints it, and a's is the t
    interval of its ten repetitions (scipy's, not the site's code)."""
    sub, ref, make_build = nightly_setup(alert_emails="", webhook_url="")
    wide = [100.0, 90.0, 110.0, 95.0, 105.0, 80.0, 120.0, 100.0, 98.0, 102.0]
    for char, samples, status in (
        ("a", BASE, "built"),
        ("b", [], "failed"),
        ("c", wide, "built"),
        ("d", [v * 0.5 for v in BASE], "built"),
    ):
        build_report_record(report=_report(make_build(char, samples, status=status), status))

    html = client.get(f"/regressions/{sub.pk}/{ref.pk}/").content.decode()

    a, b, c, d = ("a" * 10, "b" * 10, "c" * 10, "d" * 10)
    table = _ci_cells(html)
    assert table[b] is None and all(table[x] for x in (a, c, d))
    mean = sum(BASE) / len(BASE)
    low, high = scipy_stats.t.interval(0.95, len(BASE) - 1, loc=mean, scale=scipy_stats.sem(BASE))
    assert table[a] == (round(low, 2), round(high, 2))

    decode = _figure(html, "timeline-decode")
    band = next(t for t in decode["data"] if t.get("name") == "95% CI")
    # a alone (its neighbour failed), then c and d as one closed shape: high edge out, low edge back.
    assert band["x"] == [a, a, None, c, d, d, c]
    ci = {x: (lo, hi) for x, (lo, hi) in ((x, table[x]) for x in (a, c, d))}
    drawn = [None if y is None else round(y, 2) for y in band["y"]]
    assert drawn == [ci[a][1], ci[a][0], None, ci[c][1], ci[d][1], ci[d][0], ci[c][0]]
    line = next(t for t in decode["data"] if t.get("name") == "Decode (t/s)")
    bars = line["error_y"]
    for i, x in enumerate(line["x"]):
        if table[x] is None:
            assert line["y"][i] is None and bars["array"][i] is None and bars["arrayminus"][i] is None
        else:
            assert round(line["y"][i] + bars["array"][i], 2) == table[x][1]
            assert round(line["y"][i] - bars["arrayminus"][i], 2) == table[x][0]
    # The axis keeps the builds' order though the band names b nowhere.
    assert decode["layout"]["xaxis"]["categoryarray"] == [a, b, c, d]


def test_a_regression_judged_against_a_held_baseline_names_it_and_the_build_that_began_the_hold(
    nightly_setup: Callable[..., Any], client: Client
) -> None:
    sub, ref, make_build = nightly_setup(alert_emails="", webhook_url="")
    slow = [v * 0.9 for v in BASE]
    builds, verdicts = {}, {}
    for char, samples in (("a", BASE), ("b", slow), ("c", slow), ("d", BASE), ("e", slow)):
        builds[char] = make_build(char, samples)
        _, (verdicts[char],) = build_report_record(report=_report(builds[char]) | {"runs": _runs(builds[char])})
    # b began it; c is judged against a again (b is not accepted) and is the same regression;
    # d is back to a's speed; e is a new regression, against d.
    assert [verdicts[c].kind for c in "abcde"] == ["none", "regression", "regression", "none", "regression"]
    assert [verdicts[c].baseline_build_id for c in "bcde"] == [builds[c].pk for c in "aaad"]
    html = client.get(f"/regressions/{sub.pk}/{ref.pk}/").content.decode()
    rows = {c: _row(html, builds[c].pk) for c in "abcde"}
    assert f"baseline held at <code>{'a' * 10}</code> since" in rows["c"]
    assert f'href="#build-{builds["b"].pk}"><code>{"b" * 10}</code></a> regressed' in rows["c"]
    for c in "abde":
        assert "baseline held" not in rows[c], c


def _runs(build: Any) -> list[dict[str, Any]]:
    return [{"build_run_id": br.pk, "status": "finished", "error": ""} for br in build.build_runs.all()]


def _row(html: str, build_id: int) -> str:
    start = html.index(f'<tr id="build-{build_id}"')
    return html[start : html.index("</tr>", start)]

"""The commit × rig matrix: commits newest first against every visible rig of a
branch, grouped by backend; each cell's verdict in colour and words; a fixed
number of queries; hidden rigs hidden; readable at 1400 and 390 px."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from leaderboard.intake.models import ReviewStatus, RigOwnership
from leaderboard.regressions.models import (
    BuildRecord,
    BuildStatus,
    Confirmation,
    Subscription,
    Verdict,
    VerdictKind,
)
from leaderboard.regressions.services.builds import build_report_record

pytestmark = pytest.mark.django_db(transaction=True)

REPO = "https://github.com/ggml-org/llama.cpp"
BASE = [100.0, 101.0, 99.0, 100.5, 99.5, 100.2, 99.8, 100.1, 99.9, 100.3]


def _url(repo: str = REPO, branch: str = "master") -> str:
    return "/regressions/matrix/?" + urlencode({"repo": repo, "branch": branch})


def _report(build: Any, status: str = "built", subject: str = "") -> dict[str, Any]:
    return {"build_id": build.pk, "status": status, "build": {"build_time_s": 12.0, "subject": subject}, "runs": []}


def _night(
    make_build: Callable[..., Any], char: str, samples: list[float], status: str = "built", subject: str = ""
) -> Any:
    build = make_build(char, samples, status=status)
    build_report_record(report=_report(build, status, subject))
    return build


def _cells(html: str) -> list[str]:
    """Return the class of every matrix cell, in document order."""
    import re

    return re.findall(r'<td class="cell ([a-z-]+)">', html)


@pytest.fixture
def two_rigs(nightly_setup: Callable[..., Any]) -> dict[str, Any]:
    """A CUDA rig that built a, b (regression), c; a CPU rig that built a and
    failed b; a Vulkan rig on another branch."""
    cuda, cuda_ref, cuda_build = nightly_setup(rig_name="cuda-rig", build_flags="-DGGML_CUDA=ON")
    cpu, cpu_ref, cpu_build = nightly_setup(rig_name="cpu-rig", build_flags="-DGGML_NATIVE=OFF")
    other, _, other_build = nightly_setup(rig_name="vulkan-rig", build_flags="-DGGML_VULKAN=ON", branch="other")
    _night(cuda_build, "a", BASE, subject="ggml : first <commit> & co")
    _night(cpu_build, "a", BASE)
    _night(cuda_build, "b", [v * 0.8 for v in BASE], subject="llama : tidy decode entry point")
    _night(cpu_build, "b", [], status="failed")
    _night(cuda_build, "c", BASE)  # the fix: judged against a (b regressed, so it is no baseline)
    _night(other_build, "z", BASE)
    return {"cuda": cuda, "cpu": cpu, "other": other, "cuda_build": cuda_build, "cpu_build": cpu_build}


def test_the_matrix_shows_each_commit_against_each_rig_by_backend_in_colour_and_words(two_rigs, client: Client):
    response = client.get(_url())

    assert response.status_code == 200
    html = response.content.decode()
    # Backends in their order, CUDA before CPU; the other branch's rig is not here.
    assert html.index(">CUDA<") < html.index(">CPU<")
    assert "cuda-rig" in html and "cpu-rig" in html and "vulkan-rig" not in html
    # Newest commit first: c, b, a; columns CUDA then CPU.
    assert html.index("c" * 10) < html.index("b" * 10) < html.index("a" * 10)
    assert _cells(html) == [
        "none", "not-built",            # c: no change on CUDA (against a), CPU never built it
        "regression", "not-built",      # b: regression on CUDA, CPU's build failed
        "inconclusive", "inconclusive",  # a: first builds, no baseline
    ]  # fmt: skip
    assert "-20.0%" in html
    assert "build failed" in html and "not built" in html and "no change" in html
    # A verdict's cell opens the pair's figures: its run against its baseline run on the compare page.
    assert "/compare/?runs=" in html


def test_each_commit_row_shows_its_subject_as_the_rigs_build_recorded_it(two_rigs, client: Client):
    html = client.get(_url()).content.decode()
    row = html[html.index("b" * 10) :]
    row = row[: row.index("</tr>")]
    assert '<span class="subject">llama : tidy decode entry point</span>' in row
    # Escaped, and read from the one rig that reported it (the CPU rig's build of a said nothing).
    assert "ggml : first &lt;commit&gt; &amp; co" in html
    # A commit no build recorded a subject for, with no mirror of the repository: no subject.
    c_row = html[html.index("c" * 10) :]
    assert '<span class="subject">' not in c_row[: c_row.index("</tr>")]
    # A hidden rig's report shows nowhere: the subject it reported for c stays off the public page.
    hidden = two_rigs["other"]
    hidden.rig.review_status = ReviewStatus.PENDING
    hidden.rig.save(update_fields=["review_status"])
    c_build = two_rigs["cuda"].builds.get(commit="c" * 40)
    BuildRecord.objects.create(subscription=Subscription.objects.create(
        rig=hidden.rig, repo_url=REPO, branch="master", build_flags="-DGGML_VULKAN=ON"
    ), commit=c_build.commit, subject="a pending rig's words", status="failed")  # fmt: skip
    assert "a pending rig&#x27;s words" not in client.get(_url()).content.decode()
    BuildRecord.objects.filter(commit=c_build.commit, subscription__rig=hidden.rig).update(subject="")
    c_build.subject = "llama : the fix"
    c_build.save(update_fields=["subject"])
    assert '<span class="subject">llama : the fix</span>' in client.get(_url()).content.decode()


def test_a_cell_says_whether_it_is_the_nightly_run_an_ab_confirmation_or_a_fanout_and_its_verdict(
    two_rigs, nightly_setup: Callable[..., Any], client: Client
):
    regression = Verdict.objects.get(build__subscription=two_rigs["cuda"], build__commit="b" * 40)
    Verdict.objects.filter(pk=regression.pk).update(confirmation=Confirmation.AB_CONFIRMED, ab_n_pairs=4)
    # The CPU rig's own nightly of b failed; a fan-out build of the regression's commit on a third rig.
    third, ref, _ = nightly_setup(rig_name="metal-rig", build_flags="-DGGML_METAL=ON")
    fanout = BuildRecord.objects.create(
        subscription=third, commit="b" * 40, previous_commit="a" * 40, fanout_of=regression, accepted=False,
        status=BuildStatus.BENCHMARKED,
    )  # fmt: skip
    html = client.get(_url()).content.decode()
    assert "nightly run + A/B confirmation (4 A/B pairs)" in html and "reproduced by A/B pairs" in html
    assert "fan-out: A/B check of a regression found on another rig" in html and "A/B pairs not all back yet" in html
    Verdict.objects.create(
        build=fanout, reference_config=ref, new_run=regression.new_run, kind=VerdictKind.NONE, effect_pct=-0.4,
        confirmation=Confirmation.AB_REFUTED, ab_n_pairs=6, fanout_of=regression, commit_from="a" * 40,
        commit_to="b" * 40,
    )  # fmt: skip
    html = client.get(_url()).content.decode()
    row = html[html.index("b" * 10) :]
    row = row[: row.index("</tr>")]
    assert "fan-out: 6 A/B pairs checking a regression found on another rig" in row
    assert "not reproduced by A/B pairs" in row and "-0.4%" in row
    # The first builds' cells are the nightly runs alone.
    a_row = html[html.index("a" * 10) :]
    assert a_row[: a_row.index("</tr>")].count('<span class="source">nightly run</span>') == 2


def test_the_index_links_every_watched_branch_to_its_matrix(two_rigs, client: Client):
    html = client.get("/regressions/").content.decode()
    assert _url().replace("&", "&amp;") in html
    assert _url(branch="other").replace("&", "&amp;") in html


def test_a_missing_or_too_long_parameter_is_a_400_naming_it_and_an_unknown_branch_404(two_rigs, client: Client):
    missing = client.get("/regressions/matrix/?branch=master")
    assert missing.status_code == 400 and b"repo" in missing.content
    too_long = client.get(_url(branch="b" * 201))
    assert too_long.status_code == 400 and b"branch" in too_long.content
    assert client.get(_url(branch="nobody-watches-this")).status_code == 404


def test_the_matrix_takes_the_same_number_of_queries_for_more_rigs_and_commits(
    nightly_setup: Callable[..., Any], client: Client
):
    def count() -> int:
        with CaptureQueriesContext(connection) as queries:
            assert client.get(_url()).status_code == 200
        return len(queries)

    _, _, first = nightly_setup(rig_name="rig-1", build_flags="-DGGML_CUDA=ON")
    _night(first, "a", BASE)
    _night(first, "b", [v * 0.8 for v in BASE])
    small = count()
    for n in range(2, 5):
        _, _, make = nightly_setup(rig_name=f"rig-{n}", build_flags="" if n % 2 else "-DGGML_HIP=ON")
        for char in "abcd":
            _night(make, char, [v * (1.0 - 0.05 * "abcd".index(char)) for v in BASE])
    large = count()
    html = client.get(_url()).content.decode()
    assert len(_cells(html)) == 4 * 4  # four commits × four rigs: the page did grow
    assert large == small, f"{small} queries for 1 rig × 2 commits, {large} for 4 × 4"


def test_a_pending_rigs_subscription_shows_only_to_its_owner_and_staff(two_rigs, client: Client):
    owner = User.objects.create_user("owner", "owner@example.org", "a-long-pass-phrase-91")
    staff = User.objects.create_user("staff", "staff@example.org", "a-long-pass-phrase-91", is_staff=True)
    rig = two_rigs["cpu"].rig
    rig.review_status = ReviewStatus.PENDING
    rig.owner = owner
    rig.save(update_fields=["review_status", "owner"])
    RigOwnership.objects.create(rig=rig, owner=owner)

    public = client.get(_url()).content.decode()
    assert "cuda-rig" in public and "cpu-rig" not in public
    for user in (owner, staff):
        viewer = Client()
        viewer.force_login(user)
        assert "cpu-rig" in viewer.get(_url()).content.decode()
    # A branch only a pending rig watches is not found by the public.
    rig2 = two_rigs["other"].rig
    rig2.review_status = ReviewStatus.PENDING
    rig2.save(update_fields=["review_status"])
    assert client.get(_url(branch="other")).status_code == 404
    assert _url(branch="other").replace("&", "&amp;") not in client.get("/regressions/").content.decode()


@pytest.mark.parametrize("width", [1400, 390])
def test_the_matrix_reads_at_desktop_and_phone_widths(two_rigs, live_server, chromium, screenshot_dir, width):
    context = chromium.new_context(viewport={"width": width, "height": 900}, is_mobile=width < 500)
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    try:
        page.goto(live_server.url + _url())
        page.screenshot(path=str(screenshot_dir / f"regressions-matrix-{width}.png"), full_page=True)
        # The page never scrolls sideways; the table may, inside its container.
        assert page.evaluate("document.documentElement.scrollWidth") <= width + 1
        cell = page.locator("td.cell.regression").first
        assert cell.is_visible() and "regression" in cell.inner_text()
        assert page.locator("td.cell.regression").evaluate("e => getComputedStyle(e).backgroundColor") != (
            page.locator("td.cell.none").first.evaluate("e => getComputedStyle(e).backgroundColor")
        )
        # The commit column stays in view while the cells scroll.
        commit = page.locator("tbody th.commit").first
        assert commit.bounding_box()["x"] >= 0
        wrap_scrolls = page.evaluate("(e => e.scrollWidth > e.clientWidth)(document.querySelector('.matrix-wrap'))")
        if width == 390:
            assert wrap_scrolls or page.evaluate("document.querySelector('table.matrix').offsetWidth") <= width
        with page.expect_navigation(wait_until="commit"):
            cell.locator("a").click()
        # A regression's cell opens its report (the pair's figures, rig by rig).
        assert "/regressions/report/" in page.url
    finally:
        context.close()
    assert not errors


@pytest.mark.parametrize(
    ("effect_pct", "shown"), [(-0.04, "0.0%"), (0.04, "0.0%"), (-0.05001, "-0.1%"), (2.345, "+2.3%")]
)
def test_a_cells_effect_that_rounds_to_zero_is_unsigned(effect_pct: float, shown: str) -> None:
    """The demo's matrix of real releases showed "-0.0%" (the site crawl's unreadable text): the
    cell and the pages' ``signed`` filter say a change by one definition (core/labels.signed_pct)."""
    from leaderboard.boards.templatetags.boards import signed
    from leaderboard.regressions.matrix import Cell

    assert Cell(state="none", word="no change", effect_pct=effect_pct).effect_label == shown == signed(effect_pct)

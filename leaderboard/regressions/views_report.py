"""The regression report page and its Markdown export (report.py gathers it)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from leaderboard.regressions.report import regression_report
from leaderboard.regressions.report_md import COLUMNS, effect_text, noise_text, report_markdown, side_text
from leaderboard.results.models import Rig

# The page's column order: the figures first, so a phone shows them without scrolling
# (the Markdown keeps COLUMNS, where a rig's backend follows its name).
PAGE_COLUMNS = tuple(
    COLUMNS[COLUMNS.index(name)]
    for name in ("rig", "result", "effect: % [95% CI]", "baseline t/s: mean [95% CI] (n)",
                 "candidate t/s: mean [95% CI] (n)", "p", "test", "backend", "hardware", "reference", "noise")
)  # fmt: skip


def report_page(request: HttpRequest, verdict_id: int) -> HttpResponse:
    """The report as a page; ``?format=md`` gives the Markdown as text/markdown."""
    report = regression_report(verdict_id=verdict_id, rigs=Rig.objects.visible_to(request.user))
    markdown = report_markdown(report)
    if request.GET.get("format") == "md":
        return HttpResponse(markdown, content_type="text/markdown; charset=utf-8")
    # The cells as the Markdown writes them: one text per figure on both.
    rows = [
        {
            "answer": a,
            "baseline": side_text(a, "baseline"),
            "candidate": side_text(a, "candidate"),
            "effect": effect_text(a),
            "noise": noise_text(a),
        }
        for a in report.answers
    ]
    context = {"report": report, "markdown": markdown, "columns": PAGE_COLUMNS, "rows": rows}
    return render(request, "regressions/report.html", context)


def report_markdown_file(request: HttpRequest, verdict_id: int) -> HttpResponse:
    """The Markdown export at its own address (``…/report/<id>.md``)."""
    markdown = report_markdown(regression_report(verdict_id=verdict_id, rigs=Rig.objects.visible_to(request.user)))
    return HttpResponse(markdown, content_type="text/markdown; charset=utf-8")

"""HTML pages: the list of subscriptions and one timeline (selector → chart → template)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from leaderboard.regressions.charts import timeline_figures
from leaderboard.regressions.matrix import branches_list
from leaderboard.regressions.selectors import subscriptions_list, timeline_get


def subscriptions_page(request: HttpRequest) -> HttpResponse:
    context = {"subscriptions": subscriptions_list(), "branches": branches_list(viewer=request.user)}
    return render(request, "regressions/index.html", context)


def timeline_page(request: HttpRequest, subscription_id: int, reference_id: int) -> HttpResponse:
    timeline = timeline_get(subscription_id=subscription_id, reference_id=reference_id, viewer=request.user)
    return render(
        request,
        "regressions/timeline.html",
        {"timeline": timeline, "figures": timeline_figures(timeline.points), "points": reversed(timeline.points)},
    )

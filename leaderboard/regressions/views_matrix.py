"""The commit × rig matrix of one watched branch (selector → template)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import render
from django.views.decorators.http import require_GET

from leaderboard.regressions.forms import subscribable_rigs
from leaderboard.regressions.matrix import MAX_COMMITS, matrix_get

# Bounds on the query string: a repository URL and a branch name as the Subscription stores them.
_LIMITS = {"repo": 500, "branch": 200}


@require_GET
def matrix_page(request: HttpRequest) -> HttpResponse:
    """``?repo=URL&branch=NAME``: 400 naming the parameter when one is missing
    or too long, 404 when no rig the viewer may see watches that branch."""
    values = {}
    for name, limit in _LIMITS.items():
        value = request.GET.get(name, "").strip()
        if not value:
            return HttpResponseBadRequest(f"{name}: required", content_type="text/plain")
        if len(value) > limit:
            return HttpResponseBadRequest(f"{name}: at most {limit} characters", content_type="text/plain")
        values[name] = value
    matrix = matrix_get(repo_url=values["repo"], branch=values["branch"], viewer=request.user)
    # The columns whose subscription this viewer may add reference configurations to.
    rig_ids = {c.rig_id for c in matrix.columns}
    manageable = (
        set(subscribable_rigs(request.user).filter(pk__in=rig_ids).values_list("pk", flat=True))
        if request.user.is_authenticated
        else set()
    )
    context = {"matrix": matrix, "max_commits": MAX_COMMITS, "manageable": manageable}
    return render(request, "regressions/matrix.html", context)

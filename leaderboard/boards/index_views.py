"""The index pages: every GPU model, model file and rig, each linking to its own
page, and the runs with a context sweep (the sweeps page with no run chosen)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from leaderboard.boards.selectors.indexes import gpu_index, model_index, rig_index


@require_GET
def gpus(request: HttpRequest) -> HttpResponse:
    return render(request, "boards/gpus.html", {"entries": gpu_index(viewer=request.user)})


@require_GET
def models(request: HttpRequest) -> HttpResponse:
    return render(request, "boards/models.html", {"entries": model_index(viewer=request.user)})


@require_GET
def rigs(request: HttpRequest) -> HttpResponse:
    return render(request, "boards/rigs.html", {"entries": rig_index(viewer=request.user)})

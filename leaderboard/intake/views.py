"""llama-bench pages: one test on one model file ranked by GPU, and the
compare-llama-bench table of two builds or two configurations."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from leaderboard.intake import selectors


def _int_or_none(text: str | None) -> int | None:
    return int(text) if text and text.isdigit() else None


@require_GET
def llama_bench_board(request: HttpRequest) -> HttpResponse:
    """``?test=<workload name>&model=<model file id>&gpu=<text>``; the first test and
    file with runs when not given."""
    tests = selectors.bench_tests()
    test = request.GET.get("test") or (tests[0] if tests else "")
    model_files = selectors.bench_model_files(test=test) if test in tests else []
    model_id = _int_or_none(request.GET.get("model"))
    if model_id not in {m.pk for m in model_files}:
        model_id = model_files[0].pk if model_files else None
    gpu = request.GET.get("gpu", "")[:100]
    ranking = selectors.gpu_ranking(test=test, model_file_id=model_id, gpu=gpu) if model_id else []
    context = {"tests": tests, "test": test, "model_files": model_files, "model_id": model_id, "gpu": gpu}
    return render(request, "intake/llama_bench_board.html", {**context, "ranking": ranking})


@require_GET
def llama_bench_compare(request: HttpRequest) -> HttpResponse:
    """``?rig=NAME&vary=build|config&a=…&b=…``: test, t/s A, t/s B, speedup."""
    choices = selectors.compare_choices()
    rig = request.GET.get("rig", "")[:200]
    if not rig and choices:
        # The first rig that has something to compare, else the first: the menus are filled.
        rig = next((c.rig for c in choices if c.comparable), choices[0].rig)
    vary = "config" if request.GET.get("vary") == "config" else "build"
    a, b = request.GET.get("a", "")[:200], request.GET.get("b", "")[:200]
    builds, configs = selectors.rig_builds_and_configs(rig=rig) if rig else ([], [])
    offered = builds if vary == "build" else configs
    if len(offered) > 1 and not a and not b:
        a, b = offered[0], offered[-1]
    rows = selectors.compare_rows(rig=rig, vary=vary, a=a, b=b) if rig and a and b else []
    context = {
        "choices": choices,
        "rig": rig,
        "vary": vary,
        "a": a,
        "b": b,
        "builds": builds,
        "configs": configs,
        "offered": offered,
        "rows": rows,
    }
    return render(request, "intake/llama_bench_compare.html", context)

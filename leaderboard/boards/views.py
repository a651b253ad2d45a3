"""The HTML pages: each view calls a selector, builds its charts with
charts/, and renders a template. No view writes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse, QueryDict
from django.shortcuts import render
from django.template import loader
from django.views.decorators.http import require_GET

from leaderboard.boards.bound_views import board_bounds, gpu_bound_context, rig_outliers
from leaderboard.boards.charts.bars import BarItem, bar_figure
from leaderboard.boards.charts.board import board_scatter_figure
from leaderboard.boards.filters import DEFAULT_SORT, SORTS
from leaderboard.boards.selectors.concurrency import (
    concurrency_board,
)
from leaderboard.boards.selectors.leaderboard import (
    LeaderboardView,
    leaderboard_query,
    leaderboard_view,
    rig_board,
    rigs_mixing,
    usd_per_kwh_from,
    workload_choices,
)
from leaderboard.boards.selectors.noise import NOISE_MARGIN_RULE, rig_spreads
from leaderboard.core.api.errors import api_not_found
from leaderboard.core.conditional import conditional_on_data
from leaderboard.intake.selectors import gpu_bench_places
from leaderboard.regressions.selectors import rig_aa_summary, timeline_links_for_rig, timeline_links_for_runs
from leaderboard.results.models import RigGpu
from leaderboard.results.selectors import model_files_visible_to

# The leaderboard's columns as (sort key or "", heading, css class), in the
# order leaderboard_cells writes them. σ, n and range sit under the decode
# figure, GPUs under the rig, so the desktop needs no sideways scrollbar;
# "opt" columns are hidden on a phone until every column is asked for.
COLUMNS = [
    ("model", "Model", "col-model"),
    ("decode", "Decode t/s", "num col-decode"),
    ("bound", "Of bound", "num opt col-bound"),
    ("engine", "Stack", "opt col-stack"),
    ("rig", "Rig / GPUs", "opt col-rig"),
    ("ctx", "Context", "num opt col-ctx"),
    ("power", "Power W", "num opt col-power"),
    ("tpkwh", "Tokens/kWh", "num opt col-tpkwh"),
    ("cost", "$/MTok", "num opt col-cost"),
    ("", "Peak VRAM GiB", "num opt col-vram"),
    ("date", "Source · date", "opt col-source"),
]


def _board_context(
    request: HttpRequest,
    view: LeaderboardView,
    *,
    ranked: QueryDict | None = None,
    export_params: QueryDict | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """Return the board's context; ``ranked``: the query the rows were ranked by (the
    leaderboard's default workload added), when it is not the address's own."""
    ranked = request.GET if ranked is None else ranked
    sort_key = view.sort.lstrip("-")
    return {
        "view": view,
        # The query the view was ranked with (a GPU or model page adds its own filter,
        # the leaderboard its default workload): the exports export what the page ranks.
        "export_params": ranked if export_params is None else export_params,
        "columns": COLUMNS,
        "sorts": [(key, label) for key, (label, _) in SORTS.items()],
        "ranked_by": SORTS[sort_key][0],
        "ranked_descending": view.sort.startswith("-"),
        "ranked_default": view.sort == DEFAULT_SORT,
        # The links keep what the address says; a default stays a default.
        "params": request.GET,
        "default_price": _default_price(),
        "timeline_links": timeline_links_for_runs(run_ids=[row.run_id for row in view.rows]),
        "bounds": board_bounds(row.run_id for row in view.rows),
        "board_figure": board_scatter_figure(view.rows),
        "bar_figure": bar_figure(
            [
                BarItem(
                    label=" · ".join(p for p in (f"{row.model} {row.quantization}".strip(), row.stack, row.rig) if p),
                    value=row.decode_tokens_per_s_mean,
                    error=row.decode_tokens_per_s_stdev,
                    detail=row.model_class,
                    group=row.workload,
                )
                for row in view.rows[:15]
            ]
        ),
        # A ranking across workloads is flagged unless one is chosen.
        "mixed_workloads": (
            len(workloads)
            if len(workloads := {row.workload for row in view.rows}) > 1 and not ranked.get("workload")
            else 0
        ),
        **extra,
    }


@require_GET
@conditional_on_data
def leaderboard(request: HttpRequest) -> HttpResponse:
    """The leaderboard: one workload ranked (the one with the most runs, unless the
    address names one, or ``workload=all`` for every workload mixed); ranked at N
    streams with ``?concurrency=N``, over every workload the filters keep."""
    choices = workload_choices(request.GET)
    ranked = leaderboard_query(request.GET, choices)
    view = leaderboard_view(ranked)
    context = _board_context(
        request,
        view,
        ranked=ranked,
        workload_choices=choices,
        workload_chosen=ranked.get("workload", ""),
        workload_default="workload" not in request.GET and ranked is not request.GET,
        all_runs=sum(c.runs for c in choices),
    )
    context["cboard"] = concurrency_board(ranked, view.form)
    return render(request, "boards/leaderboard.html", context)


def _every_workload(params: QueryDict) -> QueryDict:
    """Return a scoped page's query for its exports: a GPU or model page ranks every
    workload unless one is chosen, and an export without one would take the
    leaderboard's default workload (leaderboard_query)."""
    if params.get("workload"):
        return params
    scoped = params.copy()
    scoped["workload"] = "all"
    return scoped


@require_GET
@conditional_on_data
def gpu_page(request: HttpRequest, model: str) -> HttpResponse:
    """The stacks ranked on one GPU model: the leaderboard with its GPU filter set."""
    if not RigGpu.objects.visible_to(request.user).filter(model=model).exists():
        raise Http404("no rig has this GPU")
    params = request.GET.copy()
    params["gpu"] = model
    view = leaderboard_view(params)
    context = _board_context(
        request,
        view,
        ranked=params,
        export_params=_every_workload(params),
        scope_title=model,
        scope_kind="GPU",
        scope_param="gpu",
    )
    context["llama_bench_places"] = gpu_bench_places(gpu=model)
    context.update(gpu_bound_context(gpu=model, viewer=request.user))
    context["mixed_rigs"] = rigs_mixing(gpu=model)
    return render(request, "boards/scoped.html", context)


@require_GET
@conditional_on_data
def model_page(request: HttpRequest, model_file_id: int) -> HttpResponse:
    """The stacks and rigs ranked on one model file."""
    model_file = model_files_visible_to(request.user).filter(pk=model_file_id).first()
    if model_file is None:
        raise Http404("no such model file")
    params = request.GET.copy()
    params["model_file"] = str(model_file_id)
    view = leaderboard_view(params)
    title = f"{model_file.name} {model_file.quantization}".strip()
    context = _board_context(
        request,
        view,
        ranked=params,
        export_params=_every_workload(params),
        scope_title=title,
        scope_kind="Model file",
        scope_param="model_file",
        model_file=model_file,
    )
    return render(request, "boards/scoped.html", context)


@require_GET
def favicon(request: HttpRequest) -> HttpResponse:
    """Serve the icon browsers ask for at /favicon.ico whatever the static setup."""
    icon = Path(settings.BASE_DIR) / "static" / "boards" / "favicon.ico"
    response = HttpResponse(icon.read_bytes(), content_type="image/x-icon")
    response["Cache-Control"] = "public, max-age=86400"
    return response


def page_not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """The site's 404 (``handler404``): the API's JSON error under /api/, the site's page elsewhere."""
    if request.path.startswith("/api/"):
        return api_not_found()
    return render(request, "404.html", {"path": request.path}, status=404)


def server_error(request: HttpRequest) -> HttpResponse:
    # No context processors, no database: whatever broke may be the database.
    return HttpResponse(loader.get_template("500.html").render({}), status=500)


def _default_price() -> float:
    return float(settings.RIGBOARD_ELECTRICITY_USD_PER_KWH)


@require_GET
def rig_page(request: HttpRequest, rig_id: int) -> HttpResponse:
    price = usd_per_kwh_from(request.GET.get("usd_per_kwh"))
    board = rig_board(rig_id=rig_id, usd_per_kwh=price, viewer=request.user)
    if board is None:
        raise Http404("no such rig")
    bars = bar_figure(
        [
            BarItem(
                label=f"{row.model} {row.quantization} ({row.stack})".strip(),
                value=row.decode_tokens_per_s_mean,
                error=row.decode_tokens_per_s_stdev,
                detail=row.model_class,
                group=row.workload,
            )
            for row in board.best
        ]
    )
    context = {
        "board": board,
        "bar_figure": bars,
        "usd_per_kwh": price,
        "timelines": timeline_links_for_rig(rig_id=rig_id),
        "aa_summary": rig_aa_summary(rig_id=rig_id),
        "spreads": rig_spreads(rig_id=rig_id),
        "noise_rule": NOISE_MARGIN_RULE,
        **rig_outliers(row.run_id for row in board.best),
    }
    return render(request, "boards/rig.html", context)

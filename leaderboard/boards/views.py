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

from leaderboard.boards import chartdata
from leaderboard.boards.bound_views import board_bounds, gpu_bound_context, rig_outliers, run_bound_context
from leaderboard.boards.charts.bars import BarItem, bar_figure
from leaderboard.boards.charts.board import board_scatter_figure
from leaderboard.boards.charts.distributions import distributions_figure
from leaderboard.boards.charts.power_law import power_law_figure
from leaderboard.boards.charts.repetitions import acceptance_figure, repetitions_figure
from leaderboard.boards.charts.steps import StepData, steps_figure
from leaderboard.boards.charts.sweep import sweep_figure
from leaderboard.boards.compare import DEFAULT_TEST, TESTS, compare_runs, key_differences
from leaderboard.boards.depths import depth_comparison
from leaderboard.boards.filters import DEFAULT_SORT, SORTS
from leaderboard.boards.formatting import printed_figure
from leaderboard.boards.rows import run_label, run_row
from leaderboard.boards.selectors.concurrency import (
    HEADLINE_LATENCY,
    concurrency_board,
    concurrency_view,
    latency_figures,
    runs_with_levels,
)
from leaderboard.boards.selectors.indexes import sweep_runs
from leaderboard.boards.selectors.leaderboard import (
    LeaderboardView,
    leaderboard_query,
    leaderboard_view,
    rig_board,
    rigs_mixing,
    rows_by_ids,
    usd_per_kwh_from,
    workload_choices,
)
from leaderboard.boards.selectors.noise import NOISE_MARGIN_RULE, rig_spreads, spreads_for
from leaderboard.boards.selectors.published import (
    comparison_detail,
    comparisons_list,
    experiment_journeys,
    source_detail,
)
from leaderboard.boards.selectors.runs import (
    MAX_COMPARED,
    parse_run_ids,
    run_detail,
    runs_for_compare,
    same_key_peers,
    sweep_rows,
)
from leaderboard.core.api.errors import api_not_found
from leaderboard.core.fits import printed_fit
from leaderboard.intake.selectors import gpu_bench_places
from leaderboard.regressions.selectors import rig_aa_summary, timeline_links_for_rig, timeline_links_for_runs
from leaderboard.results.models import PublishedExperiment, RigGpu, Run
from leaderboard.results.selectors import model_files_visible_to

# The leaderboard's columns as (sort key or "", heading, css class), in the
# order leaderboard_cells writes them. σ, n and range sit under the decode
# figure, GPUs under the rig, so the desktop needs no sideways scrollbar;
# "opt" columns are hidden on a phone until every column is asked for.
COLUMNS = [
    ("model", "Model", "col-model"),
    ("decode", "Decode t/s", "num col-decode"),
    ("", "Of bound", "num opt col-bound"),
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


@require_GET
def run_page(request: HttpRequest, run_id: int) -> HttpResponse:
    run = run_detail(run_id=run_id, viewer=request.user)
    if run is None:
        raise Http404("no such run")
    reps = chartdata.repetitions(run)
    samples = list(run.samples.all())
    flags = sorted({str(flag) for s in samples for flag in (s.flags or [])})
    price = usd_per_kwh_from(request.GET.get("usd_per_kwh"))
    peers = same_key_peers(run=run, usd_per_kwh=price)
    per_rep_accept = [a for s in samples if (a := s.acceptance_pct) is not None]
    latency = latency_figures(samples)
    context = {
        "run": run,
        "row": run_row(run, usd_per_kwh=price),
        "label": run_label(run),
        "samples": samples,
        "flags": flags,
        "failed_checks": sum(1 for s in samples if s.output_ok is False),
        "checked": sum(1 for s in samples if s.output_ok is not None),
        "sweep": sweep_rows(list(run.sweep_points.all())),
        "reps_figure": repetitions_figure(run_label(run), reps, mean=run.decode_tokens_per_s_mean),
        "accept_figure": acceptance_figure(reps),
        "sweep_figure": sweep_figure([chartdata.sweep_series(run)]),
        "has_acceptance": any(r.acceptance_pct is not None for r in reps),
        # Pooled acceptance weighs long repetitions more; the per-repetition mean is shown beside it.
        "accept_mean": sum(per_rep_accept) / len(per_rep_accept) if per_rep_accept else None,
        "ttft": {k.rsplit("_", 1)[1]: latency[k].value for k in HEADLINE_LATENCY} if latency else {},
        "peers": peers,
        "peer_ids": ",".join(str(i) for i in [run.pk, *(p.run_id for p in peers)]),
        "latency": [f for k, f in latency.items() if k not in HEADLINE_LATENCY],
        "cv": concurrency_view([run], request.GET),
        "cv_single": True,
        **run_bound_context(run),
    }
    return render(request, "boards/run.html", context)


@require_GET
def compare_page(request: HttpRequest) -> HttpResponse:
    asked = parse_run_ids([*request.GET.getlist("runs"), *request.GET.getlist("add")], limit=None)
    run_ids, dropped = asked[:MAX_COMPARED], asked[MAX_COMPARED:]
    runs = runs_for_compare(run_ids=run_ids, viewer=request.user)
    test = request.GET.get("test") or DEFAULT_TEST
    if test not in TESTS:
        test = DEFAULT_TEST
    baseline_raw = request.GET.get("baseline") or ""
    price = usd_per_kwh_from(request.GET.get("usd_per_kwh"))
    compared, baseline = compare_runs(
        runs,
        baseline_id=int(baseline_raw) if baseline_raw.isdigit() else None,
        test=test,
        usd_per_kwh=price,
        spreads=spreads_for(runs),
    )
    # Headline figures measured at different context depths, and the depths the runs' sweeps share.
    depths = depth_comparison(runs, baseline)
    context = {
        "compared": [(c, depths.by_run[c.run.pk]) for c in compared],
        "baseline": baseline,
        "depths_differ": depths.differ,
        "matched": depths.matched,
        "test": test,
        "tests": TESTS,
        "run_ids": ",".join(str(r.pk) for r in runs),
        "too_few": len(runs) < 2,
        "dropped": dropped,
        "max_compared": MAX_COMPARED,
        "differences": key_differences(runs),
        "dist_figure": distributions_figure(
            chartdata.distribution_series([c.run for c in compared], [c.samples for c in compared])
        ),
        "sweep_figure": sweep_figure([chartdata.sweep_series(r) for r in runs]),
        "has_sweeps": any(r.sweep_points.all() for r in runs),
        "any_means_only": any(c.means_only for c in compared),
        "any_spread": any(c.spread for c in compared),
        "noise_rule": NOISE_MARGIN_RULE,
        "cv": concurrency_view(runs, request.GET, baseline=baseline),
        "cv_runs": ",".join(str(r.pk) for r in runs),
        "cv_keep": [(k, request.GET[k]) for k in ("baseline", "test") if request.GET.get(k)],
        "bounds": board_bounds(r.pk for r in runs),
    }
    return render(request, "boards/compare.html", context)


@require_GET
def concurrency_page(request: HttpRequest) -> HttpResponse:
    runs = runs_for_compare(run_ids=parse_run_ids(request.GET.getlist("runs")), viewer=request.user)
    context = {
        "items": [(r, run_label(r)) for r in runs],
        "cv": concurrency_view(runs, request.GET, baseline=runs[0] if runs else None),
        "cv_runs": ",".join(str(r.pk) for r in runs),
        # Nothing chosen: the runs there are to choose from.
        "pickable": [] if runs else runs_with_levels(),
    }
    return render(request, "boards/concurrency.html", context)


@require_GET
def sweeps_page(request: HttpRequest) -> HttpResponse:
    """Context sweeps overlaid; with no run chosen, the runs that have one, to pick from."""
    runs = runs_for_compare(run_ids=parse_run_ids(request.GET.getlist("runs")), viewer=request.user)
    figure = sweep_figure([chartdata.sweep_series(r) for r in runs])
    pickable = [] if runs else [(r, run_label(r)) for r in sweep_runs(viewer=request.user)]
    return render(
        request,
        "boards/sweeps.html",
        {"items": [(r, run_label(r)) for r in runs], "sweep_figure": figure, "pickable": pickable},
    )


@require_GET
def published_comparisons(request: HttpRequest) -> HttpResponse:
    return render(request, "boards/published_comparisons.html", {"comparisons": comparisons_list()})


@require_GET
def published_comparison(request: HttpRequest, comparison_id: int) -> HttpResponse:
    comparison = comparison_detail(comparison_id=comparison_id)
    if comparison is None:
        raise Http404("no such comparison")
    rows = list(comparison.rows.all())
    figure = bar_figure(
        [
            BarItem(
                label=r.label,
                value=r.decode_tokens_per_s,
                detail=r.note,
                shown=printed_figure(r, "decode_tokens_per_s"),
            )
            for r in rows
        ]
    )
    run_ids = ",".join(str(r.run_id) for r in rows if r.run_id)
    return render(
        request,
        "boards/published_comparison.html",
        {"comparison": comparison, "rows": rows, "bar_figure": figure, "run_ids": run_ids},
    )


@require_GET
def source_page(request: HttpRequest, source_id: int) -> HttpResponse:
    """An article the reported runs cite: what it is, its runs, its tables."""
    source = source_detail(source_id=source_id)
    if source is None:
        raise Http404("no such source")
    price = usd_per_kwh_from(request.GET.get("usd_per_kwh"))
    ids = list(
        Run.objects.public()
        .filter(source_id=source_id)
        .order_by("-decode_tokens_per_s_mean", "pk")
        .values_list("pk", flat=True)[:200]
    )
    context = {"source": source, "rows": rows_by_ids(ids, usd_per_kwh=price)}
    return render(request, "boards/source.html", context)


def _step(phase: PublishedExperiment, label: str) -> StepData:
    return StepData(label, phase.decode_tokens_per_s, phase.notes, printed_figure(phase, "decode_tokens_per_s"))


@require_GET
def experiments(request: HttpRequest) -> HttpResponse:
    """Every article's tuning journey, each at ``#source-<id>``: the one page for them
    (/campaigns/reported/<id>/ redirects here)."""
    journeys = []
    for position, journey in enumerate(experiment_journeys(), start=1):
        figure = steps_figure(
            [_step(p, f"{p.phase}: {p.label}") for p in journey.phases],
            side_tests=[_step(p, p.label) for p in journey.side_tests],
        )
        fits = []
        for fit_position, fit in enumerate(journey.fits, start=1):
            law = printed_fit(fit.formula)
            fit_figure = power_law_figure(law, label=fit.name) if law else None
            fits.append((fit, law, fit_figure, f"fit-{position}-{fit_position}"))
        # Seed 003's fit is over a figure its phases do not give (the GB of the model in system RAM).
        refit_note = journey.source.key.startswith("003")
        journeys.append((journey, figure, f"journey-{position}", fits, refit_note))
    return render(request, "boards/experiments.html", {"journeys": journeys})

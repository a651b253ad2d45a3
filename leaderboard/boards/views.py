"""The HTML pages: each view calls a selector, builds its charts with
charts.py, and renders a template. No view writes."""

from __future__ import annotations

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from leaderboard.boards import chartdata, charts
from leaderboard.boards.compare import DEFAULT_TEST, TESTS, compare_runs, key_differences
from leaderboard.boards.exports import rows_csv, rows_json
from leaderboard.boards.filters import COLUMN_ORDER, SORTS
from leaderboard.boards.rows import run_label, run_row
from leaderboard.boards.selectors.concurrency import concurrency_board, concurrency_view, latency_figures
from leaderboard.boards.selectors.leaderboard import leaderboard_view, rig_board, usd_per_kwh_from
from leaderboard.boards.selectors.published import comparison_detail, comparisons_list, experiment_journeys
from leaderboard.boards.selectors.runs import parse_run_ids, run_detail, runs_for_compare, sweep_rows
from leaderboard.regressions.selectors import timeline_links_for_rig, timeline_links_for_runs


@require_GET
def leaderboard(request: HttpRequest) -> HttpResponse:
    view = leaderboard_view(request.GET)
    columns = [(key, SORTS[key][0]) for key in COLUMN_ORDER]
    context = {
        "view": view,
        "columns": columns,
        "params": request.GET,
        "default_price": _default_price(),
        "timeline_links": timeline_links_for_runs(run_ids=[row.run_id for row in view.rows]),
        "cboard": concurrency_board(request.GET, view.form),
    }
    return render(request, "boards/leaderboard.html", context)


def _default_price() -> float:
    return float(settings.RIGBOARD_ELECTRICITY_USD_PER_KWH)


@require_GET
def leaderboard_csv(request: HttpRequest) -> HttpResponse:
    view = leaderboard_view(request.GET)
    if not view.form.is_valid():
        return HttpResponse(view.form.errors.as_text(), status=400, content_type="text/plain; charset=utf-8")
    response = HttpResponse(rows_csv(view.rows), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = 'attachment; filename="rigboard-leaderboard.csv"'
    return response


@require_GET
def leaderboard_json(request: HttpRequest) -> JsonResponse:
    view = leaderboard_view(request.GET)
    if not view.form.is_valid():
        return JsonResponse({"errors": view.form.errors}, status=400)
    meta = {
        "total": view.total,
        "page": view.page.number if view.page else 1,
        "per_page": view.per_page,
        "sort": view.sort,
        "usd_per_kwh": view.usd_per_kwh,
        "filters": {k: v for k, v in request.GET.items() if k not in ("page", "per_page", "sort") and v},
    }
    return JsonResponse(rows_json(view.rows, meta=meta), json_dumps_params={"ensure_ascii": False})


@require_GET
def rig_page(request: HttpRequest, rig_id: int) -> HttpResponse:
    price = usd_per_kwh_from(request.GET.get("usd_per_kwh"))
    board = rig_board(rig_id=rig_id, usd_per_kwh=price)
    if board is None:
        raise Http404("no such rig")
    bars = charts.bar_figure(
        [
            charts.BarItem(
                label=f"{row.model} {row.quantization} ({row.stack})".strip(),
                value=row.decode_tokens_per_s_mean,
                error=row.decode_tokens_per_s_stdev,
                detail=row.model_class,
            )
            for row in board.best
        ]
    )
    context = {
        "board": board,
        "bar_figure": bars,
        "usd_per_kwh": price,
        "timelines": timeline_links_for_rig(rig_id=rig_id),
    }
    return render(request, "boards/rig.html", context)


@require_GET
def run_page(request: HttpRequest, run_id: int) -> HttpResponse:
    run = run_detail(run_id=run_id)
    if run is None:
        raise Http404("no such run")
    reps = chartdata.repetitions(run)
    samples = list(run.samples.all())
    flags = sorted({str(flag) for s in samples for flag in (s.flags or [])})
    price = usd_per_kwh_from(request.GET.get("usd_per_kwh"))
    context = {
        "run": run,
        "row": run_row(run, usd_per_kwh=price),
        "label": run_label(run),
        "samples": samples,
        "flags": flags,
        "failed_checks": sum(1 for s in samples if s.output_ok is False),
        "sweep": sweep_rows(list(run.sweep_points.all())),
        "reps_figure": charts.repetitions_figure(run_label(run), reps, mean=run.decode_tokens_per_s_mean),
        "accept_figure": charts.acceptance_figure(reps),
        "sweep_figure": charts.sweep_figure([chartdata.sweep_series(run)]),
        "has_acceptance": any(r.acceptance_pct is not None for r in reps),
        "latency": latency_figures(samples),
        "cv": concurrency_view([run], request.GET),
        "cv_single": True,
    }
    return render(request, "boards/run.html", context)


@require_GET
def compare_page(request: HttpRequest) -> HttpResponse:
    run_ids = parse_run_ids(request.GET.getlist("runs"))
    runs = runs_for_compare(run_ids=run_ids)
    test = request.GET.get("test") or DEFAULT_TEST
    if test not in TESTS:
        test = DEFAULT_TEST
    baseline_raw = request.GET.get("baseline") or ""
    price = usd_per_kwh_from(request.GET.get("usd_per_kwh"))
    compared, baseline = compare_runs(
        runs, baseline_id=int(baseline_raw) if baseline_raw.isdigit() else None, test=test, usd_per_kwh=price
    )
    context = {
        "compared": compared,
        "baseline": baseline,
        "test": test,
        "tests": TESTS,
        "run_ids": ",".join(str(r.pk) for r in runs),
        "too_few": len(runs) < 2,
        "differences": key_differences(runs),
        "dist_figure": charts.distributions_figure(
            chartdata.distribution_series([c.run for c in compared], [c.samples for c in compared])
        ),
        "sweep_figure": charts.sweep_figure([chartdata.sweep_series(r) for r in runs]),
        "has_sweeps": any(r.sweep_points.all() for r in runs),
        "any_means_only": any(c.means_only for c in compared),
        "cv": concurrency_view(runs, request.GET, baseline=baseline),
        "cv_runs": ",".join(str(r.pk) for r in runs),
        "cv_keep": [(k, request.GET[k]) for k in ("baseline", "test") if request.GET.get(k)],
    }
    return render(request, "boards/compare.html", context)


@require_GET
def concurrency_page(request: HttpRequest) -> HttpResponse:
    runs = runs_for_compare(run_ids=parse_run_ids(request.GET.getlist("runs")))
    context = {
        "items": [(r, run_label(r)) for r in runs],
        "cv": concurrency_view(runs, request.GET, baseline=runs[0] if runs else None),
        "cv_runs": ",".join(str(r.pk) for r in runs),
    }
    return render(request, "boards/concurrency.html", context)


@require_GET
def sweeps_page(request: HttpRequest) -> HttpResponse:
    runs = runs_for_compare(run_ids=parse_run_ids(request.GET.getlist("runs")))
    figure = charts.sweep_figure([chartdata.sweep_series(r) for r in runs])
    return render(
        request,
        "boards/sweeps.html",
        {"items": [(r, run_label(r)) for r in runs], "sweep_figure": figure},
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
    figure = charts.bar_figure(
        [charts.BarItem(label=r.label, value=r.decode_tokens_per_s, detail=r.note) for r in rows]
    )
    run_ids = ",".join(str(r.run_id) for r in rows if r.run_id)
    return render(
        request,
        "boards/published_comparison.html",
        {"comparison": comparison, "rows": rows, "bar_figure": figure, "run_ids": run_ids},
    )


@require_GET
def experiments(request: HttpRequest) -> HttpResponse:
    journeys = [
        (
            journey,
            charts.steps_figure(
                [charts.StepData(f"{p.phase}: {p.label}", p.decode_tokens_per_s, p.notes) for p in journey.phases]
            ),
            f"journey-{position}",
        )
        for position, journey in enumerate(experiment_journeys(), start=1)
    ]
    return render(request, "boards/experiments.html", {"journeys": journeys})

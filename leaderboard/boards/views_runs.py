"""The pages of chosen runs: one run, runs compared, their sweeps and concurrency levels."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from leaderboard.boards import chartdata
from leaderboard.boards.bound_views import board_bounds, run_bound_context
from leaderboard.boards.charts.distributions import distributions_figure
from leaderboard.boards.charts.repetitions import acceptance_figure, repetitions_figure
from leaderboard.boards.charts.sweep import sweep_figure
from leaderboard.boards.compare import DEFAULT_TEST, TESTS, compare_runs, key_differences
from leaderboard.boards.depths import depth_comparison
from leaderboard.boards.rows import run_label, run_row
from leaderboard.boards.selectors.concurrency import (
    HEADLINE_LATENCY,
    concurrency_view,
    latency_figures,
    runs_with_levels,
)
from leaderboard.boards.selectors.indexes import sweep_runs
from leaderboard.boards.selectors.leaderboard import (
    usd_per_kwh_from,
)
from leaderboard.boards.selectors.noise import NOISE_MARGIN_RULE, spreads_for
from leaderboard.boards.selectors.runs import (
    MAX_COMPARED,
    parse_run_ids,
    run_detail,
    runs_for_compare,
    same_key_peers,
    sweep_rows,
)


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

"""The campaign pages: the list and one campaign (progress, best-so-far, trials,
effects, Pareto front, failure boundary, fit, recommendation)."""

from __future__ import annotations

import html
import json
from dataclasses import dataclass, field
from typing import Any

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render

from leaderboard.campaigns.analysis import Analysis, campaign_analysis
from leaderboard.campaigns.models import Campaign, Trial
from leaderboard.results.models import Source


def campaign_list(request: HttpRequest) -> HttpResponse:
    campaigns = Campaign.objects.select_related("rig")[:200]
    reported = Source.objects.filter(experiments__isnull=False).distinct().order_by("title")
    return render(request, "campaigns/list.html", {"campaigns": campaigns, "reported": reported})


@dataclass
class ReportedTrial:
    """A published phase shown as a trial: its figure as reported, no samples."""

    number: int
    params: dict[str, Any]
    state: str
    value: float | None
    label: str
    notes: str
    metrics: dict[str, Any] = field(default_factory=dict)
    samples: list[Any] = field(default_factory=list)
    failure_kind: str = ""
    failure_reason: str = ""
    duration_s: float | None = None


def reported_campaign(request: HttpRequest, source_id: int) -> HttpResponse:
    """An article's tuning journey (seed 003's phases) as a reported campaign:
    the phases in order, best-so-far, the article's own fits, as reported."""
    source = get_object_or_404(Source, pk=source_id)
    experiments = list(source.experiments.order_by("position"))
    if not experiments:
        raise Http404("this source reports no tuning phases")
    trials = [
        ReportedTrial(
            number=i,
            params=dict(e.config),
            state="complete" if e.decode_tokens_per_s is not None else "failed",
            value=e.decode_tokens_per_s,
            label=f"{e.phase}: {e.label}" if e.phase else e.label,
            notes=e.notes,
        )
        for i, e in enumerate(experiments, 1)
    ]
    analysis = campaign_analysis({"objective": "decode_tokens_per_s", "space": {}}, trials)
    figure = best_so_far_figure(analysis, "decode t/s (as reported)")
    return render(
        request,
        "campaigns/reported.html",
        {"source": source, "trials": trials, "analysis": analysis, "figure": figure, "fits": source.fits.all()},
    )


def campaign_detail(request: HttpRequest, campaign_id: int) -> HttpResponse:
    campaign = get_object_or_404(Campaign.objects.select_related("rig"), pk=campaign_id)
    trials = list(campaign.trials.select_related("run"))
    analysis = campaign_analysis(campaign.spec, trials, base=campaign.base_config)
    figures = [
        ("best-so-far", "Best so far over trials", best_so_far_figure(analysis, campaign.spec.get("objective", ""))),
        ("parallel", "Parallel coordinates", parallel_figure(campaign.spec, [t for t in trials if t.role == "search"])),
        *[
            (f"fit-{fit['parameter']}", f"Power-law fit over {fit['parameter']}", fit_figure(fit))
            for fit in analysis.fits
        ],
    ]
    rows = [_row(t, analysis) for t in trials]
    return render(
        request,
        "campaigns/detail.html",
        {
            "campaign": campaign,
            "analysis": analysis,
            "rows": rows,
            "parameters": list(campaign.spec.get("space", {})),
            "figures": figures,
            "spec_json": json.dumps(campaign.spec, indent=1),
        },
    )


def _row(trial: Trial, analysis: Analysis) -> dict[str, Any]:
    return {
        "trial": trial,
        "params": [trial.params.get(name) for name in trial.params],
        "perplexity": trial.metrics.get("perplexity"),
        "vram": trial.metrics.get("vram_peak_mib"),
        "pareto": trial.number in analysis.pareto,
        "best": analysis.best is not None and analysis.best["number"] == trial.number,
    }


def best_so_far_figure(analysis: Analysis, objective: str) -> dict[str, Any]:
    xs = [p["number"] for p in analysis.best_so_far]
    return {
        "data": [
            {"type": "scatter", "mode": "markers", "name": "trial", "x": xs,
             "y": [p["value"] for p in analysis.best_so_far], "marker": {"color": "#1f77b4"}},
            {"type": "scatter", "mode": "lines", "name": "best so far", "x": xs,
             "y": [p["best"] for p in analysis.best_so_far], "line": {"shape": "hv", "color": "#d62728"}},
        ],  # fmt: skip
        "layout": {"xaxis": {"title": {"text": "trial"}}, "yaxis": {"title": {"text": html.escape(objective)}},
                   "margin": {"l": 60, "r": 20, "t": 20, "b": 50}, "legend": {"orientation": "h", "y": -0.25}},
    }  # fmt: skip


def parallel_figure(spec: dict[str, Any], trials: list[Trial]) -> dict[str, Any]:
    """Return one line per trial across the parameters' axes (each value at its place in
    the space's list) and the objective; failed trials dashed at the objective's floor.
    Drawn with scatter lines: the vendored basic bundle has no parcoords."""
    space: dict[str, list[Any]] = spec.get("space", {})
    names = list(space)
    values = [t.value for t in trials if t.value is not None]
    low, high = (min(values), max(values)) if values else (0.0, 1.0)
    span = (high - low) or 1.0
    data = []
    for trial in trials[:300]:
        ys = [space[n].index(trial.params[n]) / max(len(space[n]) - 1, 1) if trial.params.get(n) in space[n] else None
              for n in names]  # fmt: skip
        ys.append((trial.value - low) / span if trial.value is not None else 0.0)
        share = (trial.value - low) / span if trial.value is not None else None
        color = (
            "#999999"
            if share is None
            else f"rgb({int(40 + 200 * share)},{int(80 * (1 - share))},{int(200 * (1 - share))})"
        )
        hover = html.escape(f"trial {trial.number}: {trial.value if trial.value is not None else trial.state} "
                            + ", ".join(f"{n}={trial.params.get(n)}" for n in names))  # fmt: skip
        data.append({
            "type": "scatter", "mode": "lines+markers", "x": [*names, spec.get("objective", "objective")], "y": ys,
            "line": {"color": color, "dash": "solid" if share is not None else "dot", "width": 1.5},
            "hovertext": hover, "hoverinfo": "text", "showlegend": False,
        })  # fmt: skip
    return {
        "data": data,
        "layout": {"yaxis": {"title": {"text": "place in the list (objective: low → high)"}, "range": [-0.05, 1.05]},
                   "margin": {"l": 60, "r": 20, "t": 20, "b": 80}},
    }  # fmt: skip


def _shade(share: float) -> str:
    """Return a colour from blue (the slowest trial) to red (the fastest)."""
    return f"rgb({int(40 + 200 * share)},{int(80 * (1 - share))},{int(200 * (1 - share))})"


def fit_figure(fit: dict[str, Any]) -> dict[str, Any]:
    xs = sorted({p["x"] for p in fit["points"]})
    curve_x = [xs[0] + (xs[-1] - xs[0]) * i / 50 for i in range(51)]
    return {
        "data": [
            {"type": "scatter", "mode": "markers", "name": "trials", "x": [p["x"] for p in fit["points"]],
             "y": [p["y"] for p in fit["points"]]},
            {"type": "scatter", "mode": "lines", "name": f"a·x^α, α = {fit['alpha']:.3g}", "x": curve_x,
             "y": [fit["a"] * x ** fit["alpha"] for x in curve_x]},
        ],  # fmt: skip
        "layout": {"xaxis": {"title": {"text": html.escape(fit["parameter"])}},
                   "yaxis": {"title": {"text": "objective"}},
                   "margin": {"l": 60, "r": 20, "t": 20, "b": 50}, "legend": {"orientation": "h", "y": -0.25}},
    }  # fmt: skip

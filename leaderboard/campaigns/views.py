"""The campaign pages: the list and one campaign (progress, best-so-far, trials,
effects, Pareto front, failure boundary, fit, recommendation)."""

from __future__ import annotations

import json
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.text import slugify

from leaderboard.campaigns.analysis import (
    FIT_MISS_MAX,
    FIT_R2_MIN,
    MODEL_GB_IN_RAM,
    SEED_003,
    Analysis,
    campaign_analysis,
    model_gb_in_ram,
)
from leaderboard.campaigns.charts import best_so_far_figure, fit_figure, parallel_figure, pareto_figure
from leaderboard.campaigns.models import Campaign, Trial
from leaderboard.campaigns.pareto import candidate as pareto_candidate
from leaderboard.campaigns.selectors import (
    campaign_get_visible,
    campaign_list_public,
    campaign_trials,
    reported_source_get,
    reported_source_list,
)
from leaderboard.core.labels import field_label
from leaderboard.results.hardware.selectors import bounds_for_ids
from leaderboard.results.models import Source
from runners.campaign.spec import OBJECTIVES
from runners.portable import file_name, portable_text


def campaign_list(request: HttpRequest) -> HttpResponse:
    return render(
        request, "campaigns/list.html", {"campaigns": campaign_list_public(), "reported": reported_source_list()}
    )


def reported_campaign(request: HttpRequest, source_id: int) -> HttpResponse:
    """An article's tuning journey (seed 003's phases) has one page, the experiments
    page's section for its source: this address, once a page of its own showing
    the same phases, redirects there (404 for a source without phases)."""
    source, _ = reported_source_get(source_id=source_id)
    return redirect(f"{reverse('boards:experiments')}#source-{source.pk}", permanent=True)


def campaign_detail(request: HttpRequest, campaign_id: int) -> HttpResponse:
    # A hidden rig's campaign answers 404 but to staff and its owner.
    campaign = campaign_get_visible(campaign_id=campaign_id, viewer=request.user)
    trials = campaign_trials(campaign=campaign, with_runs=True)
    analysis = campaign_analysis(
        campaign.spec,
        trials,
        base=campaign.base_config,
        derived_x={MODEL_GB_IN_RAM: _gb_in_ram(campaign, trials)},
        model_sha256={t.number: t.run.model_file.sha256 for t in trials if t.run is not None},
    )
    objective = str(campaign.spec.get("objective", ""))
    # The objective as a visitor reads it: "decode t/s", not decode_tokens_per_s.
    objective_label = field_label(objective)
    varied = [name for name, values in campaign.spec.get("space", {}).items() if len(values) > 1]
    search = [t for t in trials if t.role == "search"]
    figures = [
        ("best-so-far", "Best so far over trials", best_so_far_figure(analysis, objective_label)),
        ("parallel", "Parallel coordinates", parallel_figure(campaign.spec, search, objective_label=objective_label)),
    ]
    fits = [(f"fit-{slugify(fit['parameter'])}", fit, fit_figure(fit, objective_label)) for fit in analysis.fits]
    # Measured, yet off the Pareto front because the output check failed: said so, not "no measured trial".
    measured = [t for t in trials if t.state == "complete" and t.value is not None]
    failed_checks = [t for t in measured if not pareto_candidate(t)]
    rows = [_row(t, analysis, list(campaign.spec.get("space", {}))) for t in trials]
    # Each trial's decode against this rig's memory-bandwidth bound: how much a search can still find.
    bounds = bounds_for_ids(t.run_id for t in trials if t.run_id)
    best_run = next((t.run_id for t in trials if analysis.best and t.number == analysis.best.get("number")), None)
    return render(
        request,
        "campaigns/detail.html",
        {
            "campaign": campaign,
            "analysis": analysis,
            "rows": rows,
            "parameters": list(campaign.spec.get("space", {})),
            "figures": figures,
            "fits": fits,
            "pareto_figure": pareto_figure(analysis, objective_label, varied),
            "objective_label": objective_label,
            # The front's sentences name the objective as the spec does: in words here.
            "pareto_summary": [line.replace(objective, objective_label) for line in analysis.pareto_summary]
            if objective
            else analysis.pareto_summary,
            "bounds": bounds,
            "best_bound": bounds.get(best_run) if best_run else None,
            "measured_count": len(measured),
            "failed_check_count": len(failed_checks),
            "direction": OBJECTIVES.get(objective, "maximize"),
            "fit_r2_min": FIT_R2_MIN,
            "fit_miss_max_pct": round(FIT_MISS_MAX * 100),
            # The article whose printed fit is shown beside the campaign's own.
            "published_source": Source.objects.filter(key__startswith=SEED_003).only("pk", "title").first(),
            # The definition as a reader can reuse it: files by name, not the recording rig's paths.
            "spec_json": portable_text(json.dumps(campaign.spec, indent=1, ensure_ascii=False)),
        },
    )


def _gb_in_ram(campaign: Campaign, trials: list[Trial]) -> dict[int, float]:
    """Return each measured trial's model GB left in system RAM, from its run's
    model file (size, layers) and configuration (n_gpu_layers, -ot)."""
    has_gpu = campaign.rig.gpus.exists()
    out = {}
    for trial in trials:
        if trial.run is None:
            continue
        model, config = trial.run.model_file, trial.run.configuration
        x = model_gb_in_ram(
            file_size_bytes=model.file_size_bytes,
            layers=model.layers,
            n_gpu_layers=config.n_gpu_layers,
            has_gpu=has_gpu,
            tensor_overrides=config.tensor_overrides,
        )
        if x is not None:
            out[trial.number] = x
    return out


def _shown(value: Any) -> Any:
    # A model file is told by its name (the sha256 is on its run's page), not the rig's path.
    return file_name(value) if isinstance(value, str) else value


def _row(trial: Trial, analysis: Analysis, parameters: list[str]) -> dict[str, Any]:
    # One cell per parameter of the space, in the header's order (a trial's own
    # params may be ordered differently, or lack one).
    return {
        "trial": trial,
        "params": [_shown(trial.params.get(name)) for name in parameters],
        "perplexity": trial.metrics.get("perplexity"),
        "vram": trial.metrics.get("vram_peak_mib"),
        "pareto": trial.number in analysis.pareto,
        "best": analysis.best is not None and analysis.best["number"] == trial.number,
    }

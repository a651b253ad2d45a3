"""What a campaign trial asks of the rig beyond a plain run, read from the
config's ``[trial]`` (runners.config.TrialConfig): the same code serves the
rig's CLI (``python -m runners campaign``) and the service's jobs (the rig's
Celery task), so both paths store the same.

- ``perplexity_models``: each model file's perplexity (llama-perplexity, cached
  per sha256) with its margin to the best, measured before the server starts and
  sent in the run's ``extra.campaign.perplexity`` (model path -> figures).
- ``prune_history``: the campaign's completed trials' objective per repetition;
  each repetition but the last is checked with MedianPrune and a trial clearly
  worse than their median stops there: the run is posted aborted with the
  repetitions measured and ``extra.campaign.pruned_after`` (the step).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from runners.campaign.figures import repetition_decode
from runners.campaign.quality import model_quality
from runners.campaign.search import MedianPrune
from runners.config import RigConfig
from runners.delivery.live import EndedByService
from runners.pipeline import JobResult, run_job

PRUNED = "pruned"


def trial_extra(payload: Mapping[str, Any]) -> dict[str, Any]:
    """Return the campaign block of a run's ``extra`` ({} for a run that is no trial)."""
    return dict((payload.get("extra") or {}).get("campaign") or {})


def trial_quality(campaign_extra: Mapping[str, Any], model: str) -> dict[str, Any]:
    """Return the perplexity figures of ``model`` from a run's campaign block ({} when none)."""
    return dict((campaign_extra.get("perplexity") or {}).get(model) or {})


def run_trial_job(spec: Mapping[str, Any], **kwargs: Any) -> JobResult:
    """Run ``spec`` with ``run_job`` (``kwargs`` passed on), honouring its [trial];
    a spec without one is a plain run. Raise what run_job raises."""
    config = RigConfig.from_mapping(spec)
    trial = config.trial
    if trial is None:
        return run_job(spec, **kwargs)
    extra: dict[str, Any] = {}
    if trial.perplexity_models and config.server is not None:
        extra["perplexity"] = model_quality(list(trial.perplexity_models), config.server.binary, config.cache_dir)
    prune = MedianPrune(trial.direction, [list(h) for h in trial.prune_history])
    repetitions = config.workload.repetitions

    def on_sample(sample: dict[str, Any]) -> None:
        value = repetition_decode(sample)
        step = int(sample["index"])
        if value is not None and step < repetitions and prune(step, float(value)):
            extra["pruned_after"] = step
            raise EndedByService("campaign", PRUNED, f"pruned after {step} repetition(s): below the median")

    return run_job(spec, on_sample=on_sample if trial.prune_history else None, extra={"campaign": extra}, **kwargs)

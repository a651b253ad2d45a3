"""Stored campaign data made safe to read: numbers that JSON cannot carry become null.

Trials are checked on the way in (runners/campaign/schema.py), but rows stored
before those checks may hold Infinity, NaN or figures near the float's limit,
whose sums overflow. One such trial must not take the campaign's page and API
down with it (a strict JSON renderer refuses Infinity; a colour scale divides by
it), so every read of a campaign's trials goes through ``readable_trials`` and
every answer built from them through ``finite_json``."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from leaderboard.campaigns.models import Trial
from runners.campaign.schema import MAX_METRIC, MAX_OBJECTIVE, MAX_TRIAL_S


def _bounded(value: Any, limit: float) -> Any:
    if isinstance(value, float) and not (math.isfinite(value) and abs(value) <= limit):
        return None
    return value


def readable_trials(trials: Iterable[Trial]) -> list[Trial]:
    """Return ``trials`` (in memory, not saved) with every figure outside what the trial
    schema takes set to None: the objective, its samples, the metrics, the timings."""
    out = list(trials)
    for trial in out:
        trial.value = _bounded(trial.value, MAX_OBJECTIVE)
        trial.duration_s = _bounded(trial.duration_s, MAX_TRIAL_S)
        trial.measured_s = _bounded(trial.measured_s, MAX_TRIAL_S)
        if isinstance(trial.samples, list):
            trial.samples = [_bounded(v, MAX_OBJECTIVE) for v in trial.samples]
        else:
            trial.samples = []
        if isinstance(trial.metrics, dict):
            trial.metrics = {k: _bounded(v, MAX_METRIC) for k, v in trial.metrics.items()}
        else:
            trial.metrics = {}
    return out


def finite_json(value: Any) -> Any:
    """Return ``value`` with every float that is not finite replaced by None (lists and dicts walked)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [finite_json(v) for v in value]
    return value

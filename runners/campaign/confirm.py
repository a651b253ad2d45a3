"""The recommendation's confirmation: when the search ends, its best feasible
trial (search.confirmation_target: the recommended one, or the fastest when every
trial's answers failed) is measured again with ``confirm_repetitions``
repetitions, stored as a trial of role "confirmation" (the search never sees it).
This module says what that run confirms, for the CLI's last lines and the
campaign page and API alike."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from runners.campaign.search import confirmation_target, is_search
from runners.campaign.spec import OBJECTIVES
from runners.campaign.states import TrialState
from runners.stats import summarize


def confirmation_summary(spec: Mapping[str, Any], trials: Sequence[Any]) -> dict[str, Any] | None:
    """Return {number, of_trial, params, state, confirmed, n, mean, stdev, ci95_low,
    ci95_high, search_value, figures, text} for the campaign's confirmation trial;
    None when it has none. ``confirmed`` is True only for a complete run that holds
    the constraints. ``figures`` has, for every metric the trial kept per repetition
    (each objective and peak VRAM, a Pareto axis: runners.campaign.figures), its
    {n, mean, stdev, ci95_low, ci95_high} (Student's t, sample SD; the interval
    needs two repetitions); n, mean and the interval at the top are the objective's
    (the mean alone, the trial's value, when no repetition was kept)."""
    confirmation = next((t for t in trials if not is_search(t)), None)
    if confirmation is None:
        return None
    objective = str(spec.get("objective") or "decode_tokens_per_s")
    best = confirmation_target(OBJECTIVES.get(objective, "maximize"), [t for t in trials if is_search(t)])
    figures = {
        name: {key: getattr(summary, key) for key in ("n", "mean", "stdev", "ci95_low", "ci95_high")}
        for name, values in _repetitions(confirmation, objective).items()
        if (summary := summarize(values)) is not None
    }
    main = figures.get(objective)
    out: dict[str, Any] = {
        "number": confirmation.number,
        "of_trial": best.number if best is not None and best.params == confirmation.params else None,
        "params": confirmation.params,
        "state": confirmation.state,
        "confirmed": confirmation.state == TrialState.COMPLETE and confirmation.value is not None,
        "n": main["n"] if main else None,
        "mean": main["mean"] if main else confirmation.value,
        "stdev": main["stdev"] if main else None,
        "ci95_low": main["ci95_low"] if main else None,
        "ci95_high": main["ci95_high"] if main else None,
        "search_value": best.value if best is not None else None,
        "figures": figures,
    }
    out["text"] = _text(out, confirmation)
    return out


def _repetitions(trial: Any, objective: str) -> dict[str, list[float]]:
    """Return the trial's values per repetition by metric. A trial stored before it
    kept every metric's has its ``samples`` only, which were decode t/s's."""
    stored = getattr(trial, "repetitions", None) or {}
    kept = {name: [float(v) for v in values if v is not None] for name, values in stored.items()}
    if not kept and objective == "decode_tokens_per_s":
        kept[objective] = [float(v) for v in trial.samples if v is not None]
    return {name: values for name, values in kept.items() if values}


def _text(out: Mapping[str, Any], trial: Any) -> str:
    if out["state"] == "running":
        return "confirming: the best configuration is being measured again"
    if out["confirmed"]:
        ci = f" (95% CI {out['ci95_low']:.2f} to {out['ci95_high']:.2f})" if out["ci95_low"] is not None else ""
        return f"confirmed by {out['n']} repetitions: mean {out['mean']:.2f}{ci}"
    why = trial.failure_reason or trial.failure_kind or out["state"]
    if out["state"] == TrialState.INFEASIBLE:
        return f"not confirmed: the confirmation run {why}; do not take this configuration as it is"
    return f"not confirmed: the confirmation run {out['state']} ({why}); the search's figure stands unconfirmed"


def confirmation_text(spec: Mapping[str, Any], trials: Sequence[Any]) -> str:
    """Return the one line the CLI prints of the confirmation ('' when there is none)."""
    summary = confirmation_summary(spec, trials)
    return f"confirmation (trial {summary['number']}): {summary['text']}" if summary else ""

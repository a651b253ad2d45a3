"""The recommendation's confirmation: when the search ends, its best feasible
trial (search.best_feasible) is measured again with ``confirm_repetitions``
repetitions, stored as a trial of role "confirmation" (the search never sees it).
This module says what that run confirms, for the CLI's last lines and the
campaign page and API alike."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from runners.campaign.search import best_feasible, is_search
from runners.stats import summarize


def confirmation_summary(spec: Mapping[str, Any], trials: Sequence[Any]) -> dict[str, Any] | None:
    """Return {number, of_trial, params, state, confirmed, n, mean, stdev, ci95_low,
    ci95_high, search_value, text} for the campaign's confirmation trial; None when
    it has none. ``confirmed`` is True only for a complete run that holds the
    constraints; the mean and its 95% CI (Student's t, sample SD) come from the
    run's repetitions when the objective is decode t/s (the objective per
    repetition the trial keeps), else the mean alone."""
    confirmation = next((t for t in trials if not is_search(t)), None)
    if confirmation is None:
        return None
    direction = "minimize" if spec.get("objective") == "ttft_ms" else "maximize"
    best = best_feasible(direction, [t for t in trials if is_search(t)])
    values = [float(v) for v in confirmation.samples if v is not None]
    summary = summarize(values) if spec.get("objective", "decode_tokens_per_s") == "decode_tokens_per_s" else None
    out: dict[str, Any] = {
        "number": confirmation.number,
        "of_trial": best.number if best is not None and best.params == confirmation.params else None,
        "params": confirmation.params,
        "state": confirmation.state,
        "confirmed": confirmation.state == "complete" and confirmation.value is not None,
        "n": summary.n if summary else (len(values) or None),
        "mean": summary.mean if summary else confirmation.value,
        "stdev": summary.stdev if summary else None,
        "ci95_low": summary.ci95_low if summary else None,
        "ci95_high": summary.ci95_high if summary else None,
        "search_value": best.value if best is not None else None,
    }
    out["text"] = _text(out, confirmation)
    return out


def _text(out: Mapping[str, Any], trial: Any) -> str:
    if out["state"] == "running":
        return "confirming: the best configuration is being measured again"
    if out["confirmed"]:
        ci = f" (95% CI {out['ci95_low']:.2f} to {out['ci95_high']:.2f})" if out["ci95_low"] is not None else ""
        return f"confirmed by {out['n']} repetitions: mean {out['mean']:.2f}{ci}"
    why = trial.failure_reason or trial.failure_kind or out["state"]
    if out["state"] == "infeasible":
        return f"not confirmed: the confirmation run {why}; do not take this configuration as it is"
    return f"not confirmed: the confirmation run {out['state']} ({why}); the search's figure stands unconfirmed"


def confirmation_text(spec: Mapping[str, Any], trials: Sequence[Any]) -> str:
    """Return the one line the CLI prints of the confirmation ('' when there is none)."""
    summary = confirmation_summary(spec, trials)
    return f"confirmation (trial {summary['number']}): {summary['text']}" if summary else ""

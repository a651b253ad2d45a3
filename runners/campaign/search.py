"""The ask/tell loop of a campaign over Optuna's samplers.

``grid`` walks every point (in a seeded order, as Optuna's GridSampler does), ``random``
draws points (RandomSampler), ``adaptive`` proposes each next point from the
finished ones (TPESampler). All three are seeded, so a campaign is
reproducible. The loop does not know how a trial is measured: ``measure`` is
given (the rig's pipeline, or a replay of saved trials in the benchmark), so
the same code drives the CLI, the service's jobs and benchmarks/campaign_search.py.

A point already measured is not measured again: the sampler is told the value
it had, and the budget is not spent.
"""

from __future__ import annotations

import logging
import math
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import optuna

from runners.campaign.spec import CampaignSpec

# Proposals of already measured points in a row after which the space counts as exhausted.
MAX_REPEATS = 200
TRIAL_STATES = ("complete", "failed", "infeasible", "aborted")

optuna.logging.set_verbosity(logging.WARNING)


@dataclass
class TrialResult:
    """One trial: the point measured and what came of it. ``value`` is the
    objective (None unless complete); a failed trial keeps its cause and the
    server's log tail."""

    number: int
    params: dict[str, Any]
    state: str = "complete"  # one of TRIAL_STATES
    value: float | None = None
    metrics: dict[str, Any] = field(default_factory=dict)
    run_uuid: str = ""
    failure_kind: str = ""
    failure_reason: str = ""
    log_tail: str = ""
    duration_s: float | None = None  # the whole trial: dispatch, server start, load, measuring, delivery
    measured_s: float | None = None  # the requests themselves
    samples: list[float] = field(default_factory=list)  # the objective per repetition
    pruned: bool = False  # stopped after its first repetitions: clearly worse than the median
    # The run document the trial posted (what ``run --output`` writes); kept for
    # ``campaign --output``, never part of the trial record.
    run: dict[str, Any] | None = field(default=None, repr=False)

    def payload(self) -> dict[str, Any]:
        """Return the trial record the service stores (POST /api/campaigns/<id>/trials/)."""
        return {
            "number": self.number,
            "params": self.params,
            "state": self.state,
            "value": _finite(self.value),
            "metrics": {k: _finite(v) if isinstance(v, float) else v for k, v in self.metrics.items()},
            "run_uuid": self.run_uuid or None,
            "failure_kind": self.failure_kind,
            "failure_reason": self.failure_reason[:2000],
            "log_tail": self.log_tail[-8000:],
            "duration_s": self.duration_s,
            "measured_s": self.measured_s,
            "samples": [_finite(v) for v in self.samples],
            "pruned": self.pruned,
        }


def _finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


# prune(step, value) -> True when the trial's repetitions so far are clearly worse
# than the campaign's median at the same step (Optuna's MedianPruner): stop it.
Prune = Callable[[int, float], bool]
Measure = Callable[[int, dict[str, Any], Prune], TrialResult]


class Search:
    """Proposes points of ``spec.space`` with the spec's strategy and seed."""

    def __init__(self, spec: CampaignSpec, *, seed_offset: int = 0) -> None:
        self.spec = spec
        seed = spec.seed + seed_offset
        sampler: optuna.samplers.BaseSampler
        # Grid: every point once, in a seeded order (what Optuna's GridSampler does;
        # it cannot be used with ask/tell: it stops the study from inside tell()).
        self.order: list[dict[str, Any]] | None = None
        if spec.strategy == "grid":
            self.order = spec.grid()
            random.Random(spec.seed).shuffle(self.order)  # noqa: S311 - a reproducible order, not a secret
            sampler = optuna.samplers.RandomSampler(seed=seed)
        elif spec.strategy == "random":
            sampler = optuna.samplers.RandomSampler(seed=seed)
        else:
            # A few random points first, then proposals from the finished ones.
            startup = max(3, min(6, spec.grid_size() // 10))
            sampler = optuna.samplers.TPESampler(seed=seed, n_startup_trials=startup, multivariate=True)
        # A trial's first repetitions are compared with the median of the earlier
        # trials' at the same repetition, once three trials have finished.
        pruner = optuna.pruners.MedianPruner(n_startup_trials=3, n_warmup_steps=0)
        self.study = optuna.create_study(
            direction="maximize" if spec.direction == "maximize" else "minimize", sampler=sampler, pruner=pruner
        )
        self.seen: dict[tuple[Any, ...], float | None] = {}

    @classmethod
    def from_history(cls, spec: CampaignSpec, history: list[tuple[dict[str, Any], float | None]]) -> Search:
        """Return a search that has been told ``history`` ((params, value or None), in
        order): the service proposes each next trial from the stored ones. The
        sampler's seed moves on with the history, so a seeded campaign proposes the
        same next point from the same history, and random does not repeat its first."""
        search = cls(spec, seed_offset=len(history))
        distributions: dict[str, optuna.distributions.BaseDistribution] = {
            name: optuna.distributions.CategoricalDistribution(values) for name, values in spec.space.items()
        }
        for params, value in history:
            key = search._key(params)
            search.seen[key] = value
            search.study.add_trial(
                optuna.trial.create_trial(
                    params=params,
                    distributions=distributions,
                    value=value,
                    state=optuna.trial.TrialState.COMPLETE if value is not None else optuna.trial.TrialState.FAIL,
                )
            )
        return search

    def _key(self, params: dict[str, Any]) -> tuple[Any, ...]:
        return tuple(params[name] for name in self.spec.space)

    def ask(self) -> tuple[optuna.trial.Trial, dict[str, Any]] | None:
        """Return the next (trial handle, params) not measured yet; None when the space is exhausted."""
        for _ in range(MAX_REPEATS):
            if len(self.seen) >= self.spec.grid_size():
                return None
            trial = self.study.ask()
            if self.order is not None:
                point = next(p for p in self.order if self._key(p) not in self.seen)
                return trial, point
            params = {name: trial.suggest_categorical(name, values) for name, values in self.spec.space.items()}
            key = self._key(params)
            if key not in self.seen:
                return trial, params
            self._tell(trial, self.seen[key])
        return None

    def tell(
        self, trial: optuna.trial.Trial, params: dict[str, Any], value: float | None, *, pruned: bool = False
    ) -> None:
        """Record ``value`` (None: failed or infeasible) for ``params``."""
        self.seen[self._key(params)] = value
        self._tell(trial, value, pruned=pruned)

    def _tell(self, trial: optuna.trial.Trial, value: float | None, *, pruned: bool = False) -> None:
        if pruned:
            self.study.tell(trial, state=optuna.trial.TrialState.PRUNED)
        elif value is None:
            self.study.tell(trial, state=optuna.trial.TrialState.FAIL)
        else:
            self.study.tell(trial, value)


def better(spec: CampaignSpec, a: float, b: float) -> bool:
    """Return True if objective value ``a`` is better than ``b``."""
    return a > b if spec.direction == "maximize" else a < b


def run_search(
    spec: CampaignSpec,
    measure: Measure,
    *,
    on_trial: Callable[[TrialResult], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
    first_number: int = 1,
) -> list[TrialResult]:
    """Measure trials until the budget (trials, wall time) is spent, the space is
    exhausted or ``should_stop()`` says so; return them in order. A trial that
    fails is kept with its cause and the search goes on."""
    search = Search(spec)
    started = time.monotonic()
    trials: list[TrialResult] = []
    while len(trials) < spec.trial_budget():
        if should_stop is not None and should_stop():
            break
        if spec.budget_wall_time_s and time.monotonic() - started >= spec.budget_wall_time_s:
            break
        proposal = search.ask()
        if proposal is None:
            break
        handle, params = proposal

        def prune(step: int, value: float, handle: optuna.trial.Trial = handle) -> bool:
            handle.report(value, step)
            return handle.should_prune()

        result = measure(first_number + len(trials), params, prune)
        search.tell(handle, params, result.value if result.state == "complete" else None, pruned=result.pruned)
        trials.append(result)
        if on_trial is not None:
            on_trial(result)
    return trials

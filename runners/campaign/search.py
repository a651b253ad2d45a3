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
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

import optuna

from runners.campaign.spec import CampaignSpec
from runners.campaign.states import TrialRole, TrialState

# Proposals of already measured points in a row after which the space counts as exhausted.
MAX_REPEATS = 200

optuna.logging.set_verbosity(logging.WARNING)


@dataclass
class TrialResult:
    """One trial: the point measured and what came of it. ``value`` is the
    objective (None unless complete); a failed trial keeps its cause and the
    server's log tail."""

    number: int
    params: dict[str, Any]
    state: str = TrialState.COMPLETE
    value: float | None = None
    metrics: dict[str, Any] = field(default_factory=dict)
    run_uuid: str = ""
    failure_kind: str = ""
    failure_reason: str = ""
    log_tail: str = ""
    duration_s: float | None = None  # the whole trial: dispatch, server start, load, measuring, delivery
    measured_s: float | None = None  # the requests themselves
    samples: list[float] = field(default_factory=list)  # the objective per repetition
    # Every objective's (and peak VRAM's) value per repetition (runners.campaign.figures).
    repetitions: dict[str, list[float]] = field(default_factory=dict)
    pruned: bool = False  # stopped after its first repetitions: clearly worse than the median
    role: str = TrialRole.SEARCH  # or the best feasible trial measured again in full
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
            "repetitions": {k: [_finite(v) for v in values] for k, values in self.repetitions.items()},
            "pruned": self.pruned,
            "role": self.role,
        }


def _finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


class TrialLike(Protocol):
    """What the shared rules below read of a trial: a TrialResult on the rig, a stored
    Trial on the service (``pruned`` and ``role`` are read where a trial has them)."""

    @property
    def state(self) -> str: ...
    @property
    def value(self) -> float | None: ...
    @property
    def samples(self) -> list[Any]: ...


T = TypeVar("T", bound=TrialLike)


def is_search(trial: Any) -> bool:
    """Return True unless ``trial`` is a confirmation run (which the search never sees)."""
    return getattr(trial, "role", TrialRole.SEARCH) != TrialRole.CONFIRMATION


def output_check_failed(trial: Any) -> bool:
    """Return True when some of ``trial``'s answers failed the workload's output check
    (``output_ok_fraction`` below 1); False when all passed or none was checked.
    A wrong answer is never optimal, however fast: such a trial is neither confirmed,
    recommended nor on the Pareto front."""
    metrics = getattr(trial, "metrics", None) or {}
    ok = metrics.get("output_ok_fraction")
    if isinstance(ok, bool) or not isinstance(ok, int | float) or not math.isfinite(ok):
        return False
    return ok < 1.0


def best_feasible(direction: str, trials: Sequence[T]) -> T | None:
    """Return the best complete, not pruned search trial whose answers passed the output
    check (``output_check_failed``; constraints held: an infeasible trial is not complete);
    the earliest of equals; None when there is none. The one definition of the trial a
    campaign confirms and recommends, from the CLI and the service."""
    best: T | None = None
    for trial in trials:
        pruned = getattr(trial, "pruned", False)  # a reported phase (a published article's) has no such flag
        if not is_search(trial) or trial.state != TrialState.COMPLETE or pruned or trial.value is None:
            continue
        if output_check_failed(trial):
            continue
        if best is None or better_in(direction, trial.value, best.value or 0.0):
            best = trial
    return best


def confirmation_target(direction: str, trials: Sequence[T]) -> T | None:
    """Return the trial a campaign measures again when its search ends: the recommended
    one (``best_feasible``); when every measured trial's answers failed the output check,
    the fastest of them, whose confirmation is then a speed figure, never a
    recommendation (the campaign page says so). None when no search trial was measured."""
    best = best_feasible(direction, trials)
    if best is not None:
        return best
    for trial in trials:
        pruned = getattr(trial, "pruned", False)
        if not is_search(trial) or trial.state != "complete" or pruned or trial.value is None:
            continue
        if best is None or better_in(direction, trial.value, best.value or 0.0):
            best = trial
    return best


def prune_history(trials: Sequence[TrialLike]) -> list[list[float]]:
    """Return the per-repetition objective of the complete, not pruned search
    trials: what a new trial's first repetitions are compared with."""
    return [
        [float(v) for v in t.samples if v is not None]
        for t in trials
        if is_search(t) and t.state == TrialState.COMPLETE and not getattr(t, "pruned", False) and t.samples
    ]


@dataclass
class MedianPrune:
    """prune(step, value) -> True when a trial's repetitions so far are clearly
    worse than the median of the completed trials' at the same step: Optuna's
    MedianPruner (after three completed trials, from the first step) over a study
    that holds ``history`` (each completed trial's objective per repetition, step
    1 first). Called once per repetition of one trial, in order. The rig runs it
    from the config's [trial], so the CLI and the service's jobs prune alike."""

    direction: str
    history: list[list[float]]
    _trial: optuna.trial.Trial | None = field(default=None, init=False, repr=False)

    def __call__(self, step: int, value: float) -> bool:
        if self._trial is None:
            study = optuna.create_study(
                direction="minimize" if self.direction == "minimize" else "maximize",
                pruner=optuna.pruners.MedianPruner(n_startup_trials=3, n_warmup_steps=0),
            )
            for samples in self.history:
                study.add_trial(
                    optuna.trial.create_trial(
                        value=statistics.fmean(samples),
                        intermediate_values=dict(enumerate(samples, 1)),
                    )
                )
            self._trial = study.ask()
        self._trial.report(value, step)
        return bool(self._trial.should_prune())


Measure = Callable[[int, dict[str, Any], MedianPrune], TrialResult]


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
        self.study = optuna.create_study(
            direction="maximize" if spec.direction == "maximize" else "minimize", sampler=sampler
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
    return better_in(spec.direction, a, b)


def better_in(direction: str, a: float, b: float) -> bool:
    """Return True if ``a`` is better than ``b`` when the objective goes in ``direction``."""
    return a > b if direction == "maximize" else a < b


def run_search(
    spec: CampaignSpec,
    measure: Measure,
    *,
    on_trial: Callable[[TrialResult], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
    first_number: int = 1,
    into: list[TrialResult] | None = None,
) -> list[TrialResult]:
    """Measure trials until the budget (trials, wall time) is spent, the space is
    exhausted or ``should_stop()`` says so; return them in order (appended to
    ``into`` as they finish, so a caller interrupted mid-search has them). A trial
    that fails is kept with its cause and the search goes on."""
    search = Search(spec)
    started = time.monotonic()
    trials: list[TrialResult] = into if into is not None else []
    while len(trials) < spec.trial_budget():
        if should_stop is not None and should_stop():
            break
        if spec.budget_wall_time_s and time.monotonic() - started >= spec.budget_wall_time_s:
            break
        proposal = search.ask()
        if proposal is None:
            break
        handle, params = proposal
        prune = MedianPrune(spec.direction, prune_history(trials))
        result = measure(first_number + len(trials), params, prune)
        search.tell(handle, params, result.value if result.state == TrialState.COMPLETE else None, pruned=result.pruned)
        trials.append(result)
        if on_trial is not None:
            on_trial(result)
    return trials

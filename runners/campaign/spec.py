"""A tuning campaign's definition: search space, objective, constraints, strategy, budget.

One shape serves the rig's ``campaign.toml`` and the service's REST body
(``CampaignSpec.from_mapping``); every bad value raises ConfigError naming the
field (``space.threads``, ``budget.trials``) before anything is measured.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Collection, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from runners.config import SERVER_FLAGS, ConfigError

# llama-server flags a campaign may vary, and the value type each takes. ``model``
# is the model file itself, so quantizations of one model compete.
PARAMETERS: dict[str, type] = {
    "model": str,
    "n_gpu_layers": int,
    "threads": int,
    "batch_size": int,
    "ubatch_size": int,
    "cache_type_k": str,
    "cache_type_v": str,
    "flash_attn": str,
    "tensor_overrides": str,
    "spec_type": str,
    "draft_n_max": int,
    "ctx_size": int,
}
# Objective metric -> direction. Each is a mean over the trial's repetitions.
OBJECTIVES = {
    "decode_tokens_per_s": "maximize",
    "prefill_tokens_per_s": "maximize",
    "tokens_per_kwh": "maximize",
    "ttft_ms": "minimize",
}
# What a constraint may bound: the objectives, peak VRAM, perplexity (relative to
# the best model file's, in percent) and the output check (the fraction passing).
CONSTRAINT_METRICS = (*OBJECTIVES, "vram_peak_mib", "perplexity_margin_pct", "output_ok_fraction")
STRATEGIES = ("grid", "random", "adaptive")
MAX_GRID_SIZE = 100_000


@dataclass(frozen=True)
class Constraint:
    metric: str
    max: float | None = None
    min: float | None = None

    def holds(self, metrics: Mapping[str, Any]) -> bool | None:
        """Return whether the trial's metrics satisfy this bound; None when the metric is unknown."""
        value = metrics.get(self.metric)
        if value is None:
            return None
        return (self.max is None or value <= self.max) and (self.min is None or value >= self.min)

    def text(self) -> str:
        parts = [f"≥ {self.min:g}" if self.min is not None else "", f"≤ {self.max:g}" if self.max is not None else ""]
        return f"{self.metric} " + " and ".join(p for p in parts if p)


@dataclass
class CampaignSpec:
    name: str
    space: dict[str, list[Any]]
    strategy: str = "adaptive"
    objective: str = "decode_tokens_per_s"
    constraints: list[Constraint] = field(default_factory=list)
    budget_trials: int | None = None
    budget_wall_time_s: float | None = None
    repetitions: int = 2
    seed: int = 0
    # When the search ends, its best feasible trial is measured again with this
    # many repetitions (the recommendation's confidence interval); 0: not confirmed.
    confirm_repetitions: int = 10

    @property
    def direction(self) -> str:
        return OBJECTIVES[self.objective]

    def grid_size(self) -> int:
        return math.prod(len(values) for values in self.space.values())

    def grid(self) -> list[dict[str, Any]]:
        """Return every point of the space, in a fixed order."""
        names = list(self.space)
        return [dict(zip(names, combo, strict=True)) for combo in itertools.product(*self.space.values())]

    def trial_budget(self) -> int:
        """Return the number of trials to measure: the budget, capped by the grid's size."""
        size = self.grid_size()
        return min(self.budget_trials, size) if self.budget_trials else size

    def check_flags(self, accepted: Collection[str], *, where: str = "the rig's llama-server") -> None:
        """Raise ConfigError naming ``space.<parameter>`` for the first parameter
        whose llama-server flag is not in ``accepted`` (the flags ``--help`` lists)."""
        for name in self.space:
            flag = SERVER_FLAGS.get(name)
            if flag is not None and flag not in accepted:
                raise ConfigError(f"space.{name}", f"{where} does not accept {flag}")

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["constraints"] = [{k: v for k, v in asdict(c).items() if v is not None} for c in self.constraints]
        data["budget"] = {"trials": data.pop("budget_trials"), "wall_time_s": data.pop("budget_wall_time_s")}
        return data

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> CampaignSpec:
        """Return the checked spec for a JSON-able mapping; raise ConfigError naming the bad field."""
        if not isinstance(data, Mapping):
            raise ConfigError("campaign", "expected a table/object")
        known = {
            "name", "space", "strategy", "objective", "constraints", "budget", "repetitions", "seed",
            "confirm_repetitions",
        }  # fmt: skip
        for key in data:
            if key not in known:
                raise ConfigError(str(key), f"unknown field (known: {', '.join(sorted(known))})")
        name = data.get("name", "")
        if not isinstance(name, str) or not name.strip():
            raise ConfigError("name", "required: a short name for the campaign")
        strategy = data.get("strategy", "adaptive")
        if strategy not in STRATEGIES:
            raise ConfigError("strategy", f"must be one of {', '.join(STRATEGIES)}")
        objective = data.get("objective", "decode_tokens_per_s")
        if objective not in OBJECTIVES:
            raise ConfigError("objective", f"must be one of {', '.join(OBJECTIVES)}")
        budget = data.get("budget", {})
        if not isinstance(budget, Mapping):
            raise ConfigError("budget", "expected a table/object with trials and/or wall_time_s")
        for key in budget:
            if key not in ("trials", "wall_time_s"):
                raise ConfigError(f"budget.{key}", "unknown field (known: trials, wall_time_s)")
        trials = _positive(budget.get("trials"), "budget.trials", integer=True)
        wall = _positive(budget.get("wall_time_s"), "budget.wall_time_s", integer=False)
        spec = cls(
            name=name.strip()[:200],
            space=_space(data.get("space")),
            strategy=strategy,
            objective=objective,
            constraints=_constraints(data.get("constraints", [])),
            budget_trials=int(trials) if trials is not None else None,
            budget_wall_time_s=wall,
            repetitions=int(_positive(data.get("repetitions", 2), "repetitions", integer=True) or 2),
            seed=_integer(data.get("seed", 0), "seed"),
            confirm_repetitions=_integer(data.get("confirm_repetitions", 10), "confirm_repetitions"),
        )
        if spec.confirm_repetitions == 1 or spec.confirm_repetitions < 0:
            raise ConfigError("confirm_repetitions", "must be at least 2 (a confidence interval needs two), or 0: none")
        if spec.grid_size() > MAX_GRID_SIZE and spec.strategy == "grid":
            raise ConfigError("space", f"the grid has {spec.grid_size()} points; at most {MAX_GRID_SIZE}")
        return spec


def _integer(value: Any, path: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(path, f"expected an integer, got {value!r}")
    return value


def _positive(value: Any, path: str, *, integer: bool) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or (integer and not isinstance(value, int)):
        raise ConfigError(path, f"expected {'an integer' if integer else 'a number'}, got {value!r}")
    if value <= 0:
        raise ConfigError(path, "must be greater than 0")
    return float(value)


def _space(raw: Any) -> dict[str, list[Any]]:
    if not isinstance(raw, Mapping) or not raw:
        raise ConfigError("space", "required: a table of parameter -> list of values or {min, max, step}")
    space: dict[str, list[Any]] = {}
    for name, values in raw.items():
        path = f"space.{name}"
        kind = PARAMETERS.get(str(name))
        if kind is None:
            raise ConfigError(path, f"unknown parameter (known: {', '.join(sorted(PARAMETERS))})")
        if isinstance(values, Mapping):
            values = _range(values, path)
        if not isinstance(values, list):
            raise ConfigError(path, "expected a list of values or a range {min, max, step}")
        if not values:
            raise ConfigError(path, "the list of values is empty")
        for i, value in enumerate(values):
            ok = isinstance(value, kind) and not isinstance(value, bool)
            if not ok:
                raise ConfigError(f"{path}.{i}", f"expected {kind.__name__}, got {value!r}")
        if len(set(values)) != len(values):
            raise ConfigError(path, "a value is listed twice")
        space[str(name)] = list(values)
    return space


def _range(raw: Mapping[str, Any], path: str) -> list[int]:
    for key in raw:
        if key not in ("min", "max", "step"):
            raise ConfigError(f"{path}.{key}", "unknown field of a range (known: min, max, step)")
    low = _integer(raw.get("min"), f"{path}.min")
    high = _integer(raw.get("max"), f"{path}.max")
    step = _integer(raw.get("step", 1), f"{path}.step")
    if step == 0:
        raise ConfigError(f"{path}.step", "must not be 0")
    if (high - low) * step < 0:
        raise ConfigError(f"{path}.step", f"goes away from max ({low} → {high} by {step})")
    if abs(high - low) // abs(step) >= 10_000:
        raise ConfigError(path, "more than 10000 values")
    return list(range(low, high + (1 if step > 0 else -1), step))


def _constraints(raw: Any) -> list[Constraint]:
    if not isinstance(raw, list):
        raise ConfigError("constraints", "expected a list of {metric, max and/or min}")
    out = []
    for i, item in enumerate(raw):
        path = f"constraints.{i}"
        if not isinstance(item, Mapping):
            raise ConfigError(path, "expected a table/object {metric, max, min}")
        for key in item:
            if key not in ("metric", "max", "min"):
                raise ConfigError(f"{path}.{key}", "unknown field (known: metric, max, min)")
        metric = item.get("metric")
        if metric not in CONSTRAINT_METRICS:
            raise ConfigError(f"{path}.metric", f"unknown metric {metric!r} (known: {', '.join(CONSTRAINT_METRICS)})")
        bounds = {}
        for key in ("max", "min"):
            value = item.get(key)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
                raise ConfigError(f"{path}.{key}", f"expected a number, got {value!r}")
            bounds[key] = float(value) if value is not None else None
        if bounds["max"] is None and bounds["min"] is None:
            raise ConfigError(path, "give max and/or min")
        out.append(Constraint(metric=str(metric), **bounds))
    return out

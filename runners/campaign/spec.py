"""A tuning campaign's definition: search space, objective, constraints, strategy, budget.

One shape serves the rig's ``campaign.toml`` and the service's REST body: both are
checked against ``schema.CampaignSpecInput`` (``CampaignSpec.from_mapping``); every
bad value raises ConfigError naming the field (``space.threads``, ``budget.trials``)
before anything is measured.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Collection, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from runners.campaign import schema
from runners.config import SERVER_FLAGS, ConfigError
from runners.delivery.schema_types import field_errors

# What a campaign may vary, aim at and bound: the payload's one definition.
PARAMETERS, OBJECTIVES, CONSTRAINT_METRICS = schema.PARAMETERS, schema.OBJECTIVES, schema.CONSTRAINT_METRICS
STRATEGIES, MAX_GRID_SIZE = schema.STRATEGIES, schema.MAX_GRID_SIZE


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
        """Return the checked spec for a JSON-able mapping (``schema.CampaignSpecInput``);
        raise ConfigError naming the first bad field (``space.threads.step``)."""
        return cls.from_input(checked_input(schema.CampaignSpecInput, data, what="campaign"))

    @classmethod
    def from_input(cls, checked: schema.CampaignSpecInput) -> CampaignSpec:
        """Return the spec of an already validated definition (ranges expanded)."""
        return cls(
            name=checked.name,
            space={name: list(values) for name, values in checked.space.items()},
            strategy=checked.strategy,
            objective=checked.objective,
            constraints=[Constraint(metric=c.metric, max=c.max, min=c.min) for c in checked.constraints],
            budget_trials=checked.budget.trials,
            budget_wall_time_s=checked.budget.wall_time_s,
            repetitions=checked.repetitions,
            seed=checked.seed,
            confirm_repetitions=checked.confirm_repetitions,
        )


M = TypeVar("M", bound=BaseModel)


def checked_input(model: type[M], data: Any, *, what: str) -> M:
    """Return ``data`` validated against ``model``; raise ConfigError naming the first bad
    field and its reason (``what`` when the document itself is not an object)."""
    if not isinstance(data, Mapping):
        raise ConfigError(what, "expected a table/object")
    try:
        return model.model_validate(dict(data))
    except ValidationError as exc:
        path, reasons = next(iter(field_errors(exc).items()))
        raise ConfigError(what if path == "body" else path, "; ".join(reasons)) from None

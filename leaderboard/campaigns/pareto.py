"""The Pareto front of a campaign's trials over speed (the objective), quality
(perplexity, lower is better) and peak VRAM (lower is better). Pure: no Django.

Only measured trials take part: complete, with a value, and with no failed
output check (a wrong answer is never "optimal", however fast). A trial whose
perplexity or VRAM was not measured counts as the worst on that axis: what was
not measured is not credited, so such a trial is on the front only when no
measured trial is at least as fast and as lean. When no trial has the figure
(a CPU campaign has no VRAM), every trial ties on that axis and the front is
over the other two.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from runners.campaign.search import output_check_failed
from runners.portable import file_name


class ParetoTrial(Protocol):
    number: int
    params: dict[str, Any]
    state: str
    value: float | None
    metrics: dict[str, Any]


@dataclass(frozen=True)
class ParetoPoint:
    """One candidate trial; ``on_front`` when no other candidate dominates it."""

    number: int
    params: dict[str, Any]
    value: float
    perplexity: float | None
    vram_peak_mib: float | None
    on_front: bool


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def candidate(trial: ParetoTrial) -> bool:
    """Return whether ``trial`` may be on the front: measured, and its output check not failed."""
    if trial.state != "complete" or _number(trial.value) is None:
        return False
    return not output_check_failed(trial)


def _key(trial: ParetoTrial, maximize: bool) -> tuple[float, float, float]:
    """Return the trial's three costs, lower better on each (missing figures: +inf)."""
    speed = float(trial.value or 0.0)
    ppl = _number(trial.metrics.get("perplexity"))
    vram = _number(trial.metrics.get("vram_peak_mib"))
    return (-speed if maximize else speed, ppl if ppl is not None else math.inf, vram if vram is not None else math.inf)


def dominates(p: tuple[float, ...], q: tuple[float, ...]) -> bool:
    """Return whether costs ``p`` are no worse than ``q`` on every axis and better on one.
    Equal points do not dominate each other: two identical trials are both on the front."""
    return all(a <= b for a, b in zip(p, q, strict=True)) and any(a < b for a, b in zip(p, q, strict=True))


def pareto_points(trials: Sequence[ParetoTrial], *, maximize: bool = True) -> list[ParetoPoint]:
    """Return every candidate trial (see ``candidate``) with whether it is on the
    front, in the trials' order; ``maximize`` is the objective's direction."""
    chosen = [t for t in trials if candidate(t)]
    keys = [_key(t, maximize) for t in chosen]
    return [
        ParetoPoint(
            number=t.number,
            params=dict(t.params),
            value=float(t.value or 0.0),
            perplexity=_number(t.metrics.get("perplexity")),
            vram_peak_mib=_number(t.metrics.get("vram_peak_mib")),
            on_front=not any(dominates(other, keys[i]) for j, other in enumerate(keys) if j != i),
        )
        for i, t in enumerate(chosen)
    ]


def front_summary(
    points: Sequence[ParetoPoint], parameters: Sequence[str], objective: str, *, limit: int = 12
) -> list[str]:
    """Return sentences naming what is Pareto-optimal: each front trial (the first
    ``limit`` in the trials' order, then a count of the rest) with its varied
    ``parameters`` and three figures, and, when the model file was searched, which
    files have a trial on the front and which have none."""
    front = [p for p in points if p.on_front]
    if not front:
        return []
    lines = [
        f"Trial {p.number} ({', '.join(f'{n}={_file(str(p.params.get(n)))}' for n in parameters) or 'base'}): "
        f"{p.value:.4g} {objective}, perplexity {_figure(p.perplexity)}, peak VRAM {_figure(p.vram_peak_mib, ' MiB')}"
        for p in front[:limit]
    ]
    if len(front) > limit:
        lines.append(f"… and {len(front) - limit} more trials on the front (marked ◆ in the table).")
    if "model" in parameters:
        files = list(dict.fromkeys(str(p.params.get("model")) for p in points))
        optimal = [f for f in files if any(str(p.params.get("model")) == f for p in front)]
        rest = [f for f in files if f not in optimal]
        sentence = f"Pareto-optimal model files: {', '.join(_file(f) for f in optimal)}"
        if rest:
            sentence += f"; every trial of {', '.join(_file(f) for f in rest)} is dominated"
        lines.append(sentence + ".")
    return lines


def _file(path: str) -> str:
    return file_name(path)


def _figure(value: float | None, unit: str = "") -> str:
    return f"{value:.4g}{unit}" if value is not None else "not measured"

"""What the campaign page and API show, computed from the trials: progress,
best-so-far, each parameter's effect, the Pareto front, the failure boundary,
a power-law fit and the recommendation. Pure: no queries, no Django; seed 003's
printed fit is read from the published data the service ships."""

from __future__ import annotations

import functools
import json
import math
import re
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from leaderboard.campaigns.pareto import ParetoTrial, front_summary, pareto_points
from leaderboard.core.fits import PowerFit, best_fit, fit_ceiling, fit_power, printed_fit
from leaderboard.core.labels import field_label
from leaderboard.results.published_data import PUBLISHED_RESULTS
from runners.campaign.confirm import confirmation_summary
from runners.campaign.search import best_feasible, is_search, output_check_failed
from runners.campaign.spec import OBJECTIVES
from runners.campaign.trial import trial_config
from runners.config import RigConfig
from runners.portable import DEFAULT_PORT, file_name, portable_command_line, portable_text
from runners.stats import significance

ALPHA = 0.05
# A fit explains its points when it accounts for this much of their variance (R² on y)
# and misses none of them by more than this share: a curve that predicts 750 t/s
# where 522 was measured (R² 0.389) is not a law of that data, whatever its formula.
FIT_R2_MIN = 0.9
FIT_MISS_MAX = 0.25
SEED_003 = "003"
# How seed 003's notes give the number of points its fit was made over.
_FITTED_OVER = re.compile(r"over the (\d+) data points")


@functools.cache
def seed_003_fit() -> dict[str, Any]:
    """Return seed 003's printed fit (RTX 3070, 35B MoE), as the published data has it,
    in the campaign fits' notation: x the GB of the model resident in system RAM
    (the article's model_size_gb), C = 42 its "total effective memory budget", n the
    data points its notes say it was fitted over (0 when they say none), no interval
    or R². Shown as reported beside every campaign's own fits."""
    fits = json.loads(PUBLISHED_RESULTS.read_text(encoding="utf-8"))["fits"]
    printed = next(f for f in fits if f["source_file"].startswith(SEED_003))
    over = _FITTED_OVER.search(printed.get("notes") or "")
    fit = printed_fit(printed["formula"], parameter=MODEL_GB_IN_RAM, n=int(over[1]) if over else 0)
    if fit is None:
        raise ValueError(f"seed {SEED_003}'s fit is not a·(C − x)^α: {printed['formula']!r}")
    return {**fit.as_dict(), "formula": fit.formula(), "source": f"seed {SEED_003}"}


class TrialRow(ParetoTrial, Protocol):
    """A trial as the analysis reads it: what the Pareto front reads, and its
    samples and failure."""

    samples: list[Any]
    failure_kind: str
    failure_reason: str
    log_tail: str
    duration_s: float | None


def _p_value(a: Sequence[float], b: Sequence[float]) -> float | None:
    """Return the project's two-sided Mann–Whitney U p-value of ``a`` vs ``b``; None below two values each."""
    if len(a) < 2 or len(b) < 2:
        return None
    return significance(list(a), list(b), test="mannwhitney").p_value


@dataclass
class Analysis:
    done: int = 0
    budget: int = 0
    eta_s: float | None = None
    best_so_far: list[dict[str, Any]] = field(default_factory=list)
    best: dict[str, Any] | None = None
    effects: list[dict[str, Any]] = field(default_factory=list)
    highlights: list[str] = field(default_factory=list)
    pareto: list[int] = field(default_factory=list)
    pareto_points: list[dict[str, Any]] = field(default_factory=list)
    pareto_summary: list[str] = field(default_factory=list)
    failures: list[dict[str, Any]] = field(default_factory=list)
    boundary: list[str] = field(default_factory=list)
    fits: list[dict[str, Any]] = field(default_factory=list)
    published_fit: dict[str, Any] = field(default_factory=lambda: dict(seed_003_fit()))
    command_line: str = ""
    server_toml: str = ""
    # The recommended model file by name and sha256 (the command line names the file only).
    model_file: dict[str, str] | None = None
    # When measured trials exist but none may be recommended (every one failed its
    # output check): {measured, fastest: {number, value, params}}; None otherwise.
    withheld: dict[str, Any] | None = None
    # The best trial measured again in full (runners.campaign.confirm); None before.
    confirmation: dict[str, Any] | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _better(direction: str, a: float, b: float) -> bool:
    return a > b if direction == "maximize" else a < b


def campaign_analysis(
    spec: Mapping[str, Any],
    trials: Sequence[TrialRow],
    *,
    base: Mapping[str, Any] | None = None,
    derived_x: Mapping[str, Mapping[int, float]] | None = None,
    model_sha256: Mapping[int, str] | None = None,
) -> Analysis:
    """Return the analysis of ``trials`` under the campaign ``spec`` (CampaignSpec.as_dict()).

    ``trials`` are the ones to analyse (the caller picks, e.g. search trials only).
    ``derived_x`` adds fits over figures that are not parameters, by name and trial
    number (``MODEL_GB_IN_RAM``: what ``model_gb_in_ram`` gives for each trial).
    ``model_sha256``: each trial's model file's sha256 (from its run), by trial number,
    so the recommendation names the file a reader can check.

    The recommendation is ``best_feasible``'s trial: never one whose answers failed the
    output check. When every measured trial failed it, ``best`` is None and ``withheld``
    says so, with the fastest of them as a speed figure only."""
    confirmation = confirmation_summary(spec, trials)
    confirming = next((t for t in trials if not is_search(t)), None)
    trials = [t for t in trials if is_search(t)]  # the search's figures never count the confirmation run
    direction = OBJECTIVES.get(str(spec.get("objective")), "maximize")
    space: dict[str, list[Any]] = spec.get("space") or {}
    size = math.prod(len(v) for v in space.values()) if space else 0
    budget = int((spec.get("budget") or {}).get("trials") or size)
    out = Analysis(done=len(trials), budget=min(budget, size) if size else budget)
    durations = [t.duration_s for t in trials if t.duration_s]
    if durations and out.done < out.budget:
        out.eta_s = statistics.fmean(durations) * (out.budget - out.done)
    ok = [t for t in trials if t.state == "complete" and t.value is not None]
    best: TrialRow | None = None
    for t in trials:
        if (
            t.state == "complete"
            and t.value is not None
            and (best is None or _better(direction, t.value, best.value or 0))
        ):
            best = t
        out.best_so_far.append({"number": t.number, "value": t.value, "best": best.value if best else None})
    chosen = best_feasible(direction, trials)  # the one definition: the trial a campaign confirms
    if chosen is not None:
        out.best = {"number": chosen.number, "value": chosen.value, "params": chosen.params}
        if base:
            out.command_line, out.server_toml = recommendation(base, chosen.params)
            out.model_file = _model_file(base, chosen, model_sha256 or {})
    elif ok and all(output_check_failed(t) for t in ok):
        fastest = ok[0]
        for t in ok[1:]:
            if _better(direction, float(t.value or 0), float(fastest.value or 0)):
                fastest = t
        out.withheld = {
            "measured": len(ok),
            "fastest": {
                "number": fastest.number,
                "value": fastest.value,
                "params": {k: _shown(v) for k, v in fastest.params.items()},
            },
            "confirmation_answers_failed": confirming is not None and output_check_failed(confirming),
        }
    out.effects = _effects(space, ok)
    out.highlights = _highlights(out.effects, direction)
    points = pareto_points(trials, maximize=direction == "maximize")
    out.pareto = [p.number for p in points if p.on_front]
    out.pareto_points = [asdict(p) for p in points]
    out.pareto_summary = front_summary(
        points, [n for n, v in space.items() if len(v) > 1], str(spec.get("objective") or "")
    )
    out.failures = [
        {
            "number": t.number,
            "params": t.params,
            "kind": t.failure_kind,
            "reason": t.failure_reason[:300],
            "log_tail": t.log_tail[-2000:],
        }
        for t in trials
        if t.state == "failed"
    ]
    out.boundary = _boundary(space, trials) + _failing_combinations(space, trials)
    fits = [fit_points(name, _numeric_pairs(name, ok)) for name in space]
    for name, by_number in (derived_x or {}).items():
        fits.append(fit_points(name, [(by_number[t.number], float(t.value or 0)) for t in ok if t.number in by_number]))
    out.fits = [fit for fit in fits if fit is not None]
    out.confirmation = confirmation
    return out


def _repetitions(trial: TrialRow) -> list[float]:
    """Return the trial's per-repetition objective values (its mean when none were kept)."""
    values = [float(v) for v in trial.samples if v is not None]
    return values or ([float(trial.value)] if trial.value is not None else [])


def _effects(space: Mapping[str, list[Any]], ok: Sequence[TrialRow]) -> list[dict[str, Any]]:
    """Return, per parameter value, the median of its trials' repetitions against all
    the others', the effect in percent and the significance of the difference."""
    rows = []
    for name, values in space.items():
        if len(values) < 2:
            continue
        for value in values:
            inside = [v for t in ok if t.params.get(name) == value for v in _repetitions(t)]
            outside = [v for t in ok if t.params.get(name) != value for v in _repetitions(t)]
            if not inside or not outside:
                continue
            base = statistics.median(outside)
            effect = statistics.median(inside) / base - 1 if base else None
            p = _p_value(inside, outside)
            rows.append({
                "parameter": name,
                "value": value,
                "n": sum(1 for t in ok if t.params.get(name) == value),
                "median": statistics.median(inside),
                "effect_pct": effect * 100 if effect is not None else None,
                "p_value": p,
                "significant": p is not None and p < ALPHA,
            })  # fmt: skip
    return rows


def _highlights(effects: Sequence[Mapping[str, Any]], direction: str, *, count: int = 3) -> list[str]:
    """Return sentences for the largest significant effects, harmful first (a
    "16-thread trap" heads the list when there is one)."""
    sign = 1 if direction == "maximize" else -1
    significant = [e for e in effects if e["significant"] and e["effect_pct"] is not None]
    harmful = sorted((e for e in significant if sign * e["effect_pct"] < 0), key=lambda e: -abs(e["effect_pct"]))
    helpful = sorted((e for e in significant if sign * e["effect_pct"] > 0), key=lambda e: -abs(e["effect_pct"]))
    return [
        f"{e['parameter']} = {e['value']}: {e['effect_pct']:+.0f}% against the other trials' median "
        f"(p = {e['p_value']:.2g}, {e['n']} trial{'s' if e['n'] != 1 else ''}), "
        + ("worse" if e in harmful else "better")
        for e in [*harmful[:count], *helpful[:count]]
    ]


def _boundary(space: Mapping[str, list[Any]], trials: Sequence[TrialRow]) -> list[str]:
    """Return sentences like "ctx_size ≥ 20000000 failed (out of memory); ≤ 2048 ran"."""
    lines = []
    for name, values in space.items():
        numeric = [v for v in values if isinstance(v, int | float)]
        if len(numeric) != len(values):
            continue
        failed = [t.params[name] for t in trials if t.state == "failed" and name in t.params]
        ran = [t.params[name] for t in trials if t.state == "complete" and name in t.params]
        if not failed or not ran:
            continue
        low_fail = min(failed)
        if low_fail > max(ran):
            kinds = sorted(
                {field_label(t.failure_kind) for t in trials if t.state == "failed" and t.params.get(name) == low_fail}
            )
            lines.append(f"{name} ≥ {low_fail} failed ({', '.join(kinds)}); ≤ {max(ran)} ran")
    return lines


def _failing_combinations(space: Mapping[str, list[Any]], trials: Sequence[TrialRow]) -> list[str]:
    """Return sentences like "cache_type_v = q8_0 with flash_attn = off: failed in all 3 trials
    that had it (server_start); each ran without the other" for the non-numeric parameters.

    A value, or a pair of values, is named when every trial that had it failed while other trials
    ran; a pair only when neither of its values says so alone; nothing whose failed trials another
    named one already covers; and for a lone failed trial, only the one explanation its values
    leave (two would be a guess)."""
    finished = [t for t in trials if t.state in {"complete", "failed"}]
    if not any(t.state == "complete" for t in finished):
        return []
    names = [
        n for n, values in space.items() if len(values) > 1 and not all(isinstance(v, int | float) for v in values)
    ]
    values = sorted({(n, str(t.params[n])) for t in finished if t.state == "failed" for n in names if n in t.params})

    def had(condition: tuple[tuple[str, str], ...]) -> list[TrialRow]:
        return [t for t in finished if all(n in t.params and str(t.params[n]) == v for n, v in condition)]

    def always_failed(condition: tuple[tuple[str, str], ...]) -> bool:
        matched = had(condition)
        return bool(matched) and all(t.state == "failed" for t in matched)

    singles = [(c,) for c in values if always_failed((c,))]
    pairs = [
        (a, b)
        for i, a in enumerate(values)
        for b in values[i + 1 :]
        if a[0] != b[0] and (a,) not in singles and (b,) not in singles and always_failed((a, b))
    ]
    explanations: dict[frozenset[int], int] = {}
    for condition in [*singles, *pairs]:
        key = frozenset(t.number for t in had(condition))
        explanations[key] = explanations.get(key, 0) + 1
    lines: list[str] = []
    covered: list[frozenset[int]] = []
    for condition in sorted([*singles, *pairs], key=lambda c: (-len(had(c)), len(c), c)):
        matched = had(condition)
        numbers = frozenset(t.number for t in matched)
        if any(numbers <= seen for seen in covered) or (len(numbers) == 1 and explanations[numbers] > 1):
            continue
        covered.append(numbers)
        kinds = ", ".join(sorted({field_label(t.failure_kind) for t in matched if t.failure_kind}))
        what = " with ".join(f"{n} = {v}" for n, v in condition)
        ran_alone = len(condition) == 2 and all(any(t.state == "complete" for t in had((c,))) for c in condition)
        alone = "; each ran without the other" if ran_alone else ""
        count = f"all {len(matched)} trials" if len(matched) > 1 else "the one trial"
        lines.append(f"{what}: failed in {count} that had it ({kinds}){alone}")
    return lines


MODEL_GB_IN_RAM = "model GB in RAM"


def model_gb_in_ram(
    *, file_size_bytes: int | None, layers: int | None, n_gpu_layers: int | None, has_gpu: bool, tensor_overrides: str
) -> float | None:
    """Return the GB (10⁹ bytes) of the model file left in system RAM: all of it
    without a GPU, else the share of its layers not offloaded (seed 003's x).
    None when that cannot be told: no size or layer count, n_gpu_layers unset or
    negative (llama.cpp's "auto"), or ``-ot`` patterns that move tensors by name."""
    if not file_size_bytes:
        return None
    if not has_gpu:
        return file_size_bytes / 1e9
    if not layers or n_gpu_layers is None or n_gpu_layers < 0 or tensor_overrides.strip():
        return None
    return file_size_bytes / 1e9 * (1 - min(n_gpu_layers, layers) / layers)


def fit_points(name: str, pairs: Sequence[tuple[float, float]]) -> dict[str, Any] | None:
    """Fit ``pairs`` (x, objective) in both forms, a·x^α and a·(C − x)^α (C
    fitted); return the better by adjusted R² with the other under ``alternative``
    and the points under ``points``; None when neither form fits (below 3
    distinct x). a·x^α is fitted to the points with x > 0 only (its ``n`` says
    how many): n_gpu_layers = 0 is a common point and has no logarithm."""
    pairs = [(x, y) for x, y in pairs if y > 0]
    xs, ys = [p[0] for p in pairs], [p[1] for p in pairs]
    positive = [(x, y) for x, y in pairs if x > 0]
    power = fit_power(name, [p[0] for p in positive], [p[1] for p in positive])
    fits = [f for f in (power, fit_ceiling(name, xs, ys)) if f is not None]
    chosen = best_fit(fits)
    if chosen is None:
        return None
    others = [f for f in fits if f is not chosen]
    miss = worst_miss(chosen, pairs)
    return {
        **chosen.as_dict(),
        "formula": chosen.formula(),
        "alternative": {**others[0].as_dict(), "formula": others[0].formula()} if others else None,
        "points": [{"x": x, "y": y} for x, y in pairs],
        "worst_miss": miss,
        "explains": chosen.r2 is not None
        and chosen.r2 >= FIT_R2_MIN
        and (miss is None or abs(miss["miss"]) <= FIT_MISS_MAX),
    }


def worst_miss(fit: PowerFit, pairs: Sequence[tuple[float, float]]) -> dict[str, float] | None:
    """Return the measured point the curve misses most, relative to the measured value:
    {x, measured, predicted, miss} (``miss`` a share: +0.44 is 44% above); None when the
    curve predicts no point (every x outside its domain)."""
    worst: dict[str, float] | None = None
    for x, y in pairs:
        predicted = fit.predict(x)
        if predicted is None or y <= 0:
            continue
        miss = predicted / y - 1
        if worst is None or abs(miss) > abs(worst["miss"]):
            worst = {"x": x, "measured": y, "predicted": predicted, "miss": miss}
    return worst


def _numeric_pairs(name: str, ok: Sequence[TrialRow]) -> list[tuple[float, float]]:
    return [
        (float(t.params[name]), float(t.value))
        for t in ok
        if isinstance(t.params.get(name), int | float) and not isinstance(t.params.get(name), bool)
        and t.value is not None
    ]  # fmt: skip


def _shown(value: Any) -> Any:
    """Return a parameter's value as a page shows it: a path by its file name."""
    return file_name(value) if isinstance(value, str) else value


def _model_file(base: Mapping[str, Any], trial: TrialRow, sha256: Mapping[int, str]) -> dict[str, str] | None:
    """Return the recommended trial's model file as {name, sha256} ('' when its run did not say)."""
    model = trial.params.get("model") or (base.get("server") or {}).get("model")
    if not isinstance(model, str) or not model:
        return None
    return {"name": file_name(model), "sha256": sha256.get(trial.number, "")}


def recommendation(base: Mapping[str, Any], params: Mapping[str, Any]) -> tuple[str, str]:
    """Return (llama-server command line, rig.toml [server] section) for ``params`` over
    ``base``, portable: the binary and every file by name (``runners.portable``), on
    llama-server's default address and port. The recording rig's paths mean nothing on a reader's."""
    config = trial_config(base, params, repetitions=1)
    try:
        server = RigConfig.from_mapping({k: v for k, v in config.items() if k != "service"}).server
    except ValueError:
        return "", ""
    if server is None:
        return "", ""
    argv = server.argv(port=DEFAULT_PORT)
    # The harness's loopback address and port are llama-server's defaults: left to them.
    for flag in ("--host", "--port"):
        if flag in argv:
            at = argv.index(flag)
            del argv[at : at + 2]
    line = portable_command_line(argv)
    lines = ["[server]"]
    for key, value in config.get("server", {}).items():
        if key in ("startup_timeout_s", "stop_grace_s", "port", "host"):
            continue
        lines.append(f"{key} = {_toml(value)}")
    return line, portable_text("\n".join(lines))


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + " }"
    return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'

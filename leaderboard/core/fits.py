"""Power-law fits of a campaign's objective over one numeric parameter:
y = a·x^α and y = a·(C − x)^α (seed 003's form, C a ceiling fitted or given),
each with α's 95% confidence interval, R² and n, and a fit an article printed
(``printed_fit``): the one model of a power law for the campaign pages and the
boards' experiments page. Pure: numpy and scipy only.

Both forms are fitted in log space (log y = log a + α·log(x) or α·log(C − x)):
a throughput's noise is closer to a constant percentage than to a constant
number of tokens per second, and the log model makes α a slope whose standard
error scipy's curve_fit estimates from the residuals. R² is reported on y
itself, so the two forms (and the article's curve) are compared on one scale.
"""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from typing import Any

import numpy as np
from scipy import optimize
from scipy import stats as sp_stats

POWER = "a·x^α"
CEILING = "a·(C − x)^α"
# C is searched from just above the largest x out to this many spans of x beyond
# it; past that, (C − x)^α is a straight line in log space and C is undetermined.
C_SPANS = 50.0


@dataclass(frozen=True)
class PowerFit:
    """One fitted curve. ``c`` is None for a·x^α; ``c_given`` says C was not fitted.
    ``alpha_ci`` is None when no degree of freedom is left (n equals the
    number of fitted coefficients) or the covariance could not be estimated;
    ``r2`` is None only for a published fit that printed none."""

    parameter: str
    form: str
    a: float
    alpha: float
    alpha_ci: tuple[float, float] | None
    r2: float | None
    adjusted_r2: float | None
    n: int
    c: float | None = None
    c_given: bool = False

    def predict(self, x: float) -> float | None:
        """Return the curve at ``x``; None outside its domain (x ≤ 0, or x ≥ C)."""
        base = (self.c - x) if self.c is not None else x
        return self.a * base**self.alpha if base > 0 else None

    def formula(self) -> str:
        """Return the curve as the page prints it, e.g. "9.81e-06·(42 − x)^4.247"."""
        base = f"({self.c:.4g} − x)" if self.c is not None else "x"
        return f"{self.a:.3g}·{base}^{self.alpha:.3f}"

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PowerFit:
        """Return the fit ``as_dict`` gave (keys it does not know, e.g. "formula", are left out)."""
        return cls(**{f.name: data[f.name] for f in fields(cls) if f.name in data})


_PRINTED = re.compile(
    r"=\s*(?P<a>[0-9.eE+-]+)\s*[*×]\s*\(\s*(?P<c>[0-9.]+)\s*-\s*(?P<x>[A-Za-z_]+)\s*\)\s*\^\s*(?P<alpha>[0-9.]+)"
)


def printed_fit(formula: str, *, parameter: str | None = None, n: int = 0) -> PowerFit | None:
    """Return the law a formula printed like ``tok/s = 9.81e-6 * (42 - model_size_gb)^4.247``
    states, as a·(C − x)^α with C given and no interval or R² (none was printed);
    x named ``parameter``, else as printed. None for any other shape."""
    match = _PRINTED.search(formula or "")
    if match is None:
        return None
    try:
        a, c, alpha = float(match["a"]), float(match["c"]), float(match["alpha"])
    except ValueError:
        return None
    name = parameter or match["x"]
    return PowerFit(name, CEILING, a=a, alpha=alpha, alpha_ci=None, r2=None, adjusted_r2=None, n=n, c=c, c_given=True)


def _r2(y: np.ndarray, predicted: np.ndarray, coefficients: int) -> tuple[float, float | None]:
    """Return (R², adjusted R²) of ``predicted`` against ``y``; adjusted is None without a spare degree of freedom."""
    total = float(np.sum((y - y.mean()) ** 2))
    residual = float(np.sum((y - predicted) ** 2))
    r2 = 1.0 - residual / total if total > 0 else (1.0 if residual == 0 else 0.0)
    n = len(y)
    adjusted = 1.0 - (1.0 - r2) * (n - 1) / (n - coefficients) if n > coefficients else None
    return r2, adjusted


def _alpha_ci(alpha: float, variance: float, dof: int) -> tuple[float, float] | None:
    if dof <= 0 or not math.isfinite(variance) or variance < 0:
        return None
    half = float(sp_stats.t.ppf(0.975, dof)) * math.sqrt(variance)
    return (alpha - half, alpha + half)


def fit_power(parameter: str, x: Sequence[float], y: Sequence[float]) -> PowerFit | None:
    """Fit y = a·x^α; return None below 3 distinct x or with any x ≤ 0 or y ≤ 0."""
    xs, ys = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if len(set(xs.tolist())) < 3 or np.any(xs <= 0) or np.any(ys <= 0):
        return None
    line = sp_stats.linregress(np.log(xs), np.log(ys))
    a, alpha = math.exp(line.intercept), float(line.slope)
    r2, adjusted = _r2(ys, a * xs**alpha, 2)
    ci = _alpha_ci(alpha, float(line.stderr) ** 2, len(xs) - 2)
    return PowerFit(parameter, POWER, a, alpha, ci, r2, adjusted, len(xs))


def fit_ceiling(parameter: str, x: Sequence[float], y: Sequence[float], *, c: float | None = None) -> PowerFit | None:
    """Fit y = a·(C − x)^α with C fitted (above the largest x) or, with ``c``, given.

    Return None below 3 distinct x (4 when C is fitted), with any y ≤ 0, with a
    given C not above every x, when the least-squares search does not converge,
    or when C runs to the end of its range (the points show no ceiling).
    C is first profiled on a grid (each C's best a and α is a straight-line fit in
    log space), then refined with the other two by curve_fit."""
    xs, ys = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    distinct = len(set(xs.tolist()))
    if distinct < (3 if c is not None else 4) or np.any(ys <= 0):
        return None
    log_y = np.log(ys)
    if c is not None:
        if c <= xs.max():
            return None
        line = sp_stats.linregress(np.log(c - xs), log_y)
        a, alpha = math.exp(line.intercept), float(line.slope)
        r2, adjusted = _r2(ys, a * (c - xs) ** alpha, 2)
        ci = _alpha_ci(alpha, float(line.stderr) ** 2, len(xs) - 2)
        return PowerFit(parameter, CEILING, a, alpha, ci, r2, adjusted, len(xs), c=float(c), c_given=True)

    span = float(xs.max() - xs.min())
    floor = float(xs.max()) + span * 1e-3

    def squared_residuals(candidate: float) -> float:
        line = sp_stats.linregress(np.log(candidate - xs), log_y)
        predicted = line.intercept + line.slope * np.log(candidate - xs)
        return float(np.sum((log_y - predicted) ** 2))

    grid = floor + span * np.geomspace(1e-3, C_SPANS, 200)
    start_c = float(min(grid, key=squared_residuals))
    start = sp_stats.linregress(np.log(start_c - xs), log_y)

    def model(values: np.ndarray, log_a: float, alpha: float, ceiling: float) -> np.ndarray:
        return log_a + alpha * np.log(np.maximum(ceiling - values, 1e-12))

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optimize.OptimizeWarning)
            coefficients, covariance = optimize.curve_fit(
                model,
                xs,
                log_y,
                p0=[start.intercept, start.slope, start_c],
                bounds=([-np.inf, -np.inf, floor], [np.inf, np.inf, floor + span * C_SPANS]),
                maxfev=20_000,
            )
    except (RuntimeError, ValueError):
        return None
    log_a, alpha, fitted_c = (float(v) for v in coefficients)
    if fitted_c >= floor + span * C_SPANS * (1 - 1e-6) or not -700 < log_a < 700:
        # C ran to the end of its range: the points show no ceiling to fit.
        return None
    a = math.exp(log_a)
    r2, adjusted = _r2(ys, a * (fitted_c - xs) ** alpha, 3)
    ci = _alpha_ci(alpha, float(covariance[1, 1]), len(xs) - 3)
    return PowerFit(parameter, CEILING, a, alpha, ci, r2, adjusted, len(xs), c=fitted_c)


def best_fit(fits: Sequence[PowerFit | None]) -> PowerFit | None:
    """Return the fit with the highest adjusted R² (plain R² when none has one);
    None when there is none. Adjusted, because a·(C − x)^α spends one more
    coefficient than a·x^α and must earn it."""
    present = [f for f in fits if f is not None]
    if not present:
        return None
    return max(
        present,
        key=lambda f: (
            f.adjusted_r2 if f.adjusted_r2 is not None else -math.inf,
            f.r2 if f.r2 is not None else -math.inf,
        ),
    )

"""An estimate of decode speed where nobody measured: the bound of the (GPU, model)
pair times the share of their bound that comparable rigs reach, with an 80%
interval. Labelled "estimate" wherever shown and never ranked with figures.

Comparable: the same GPU family, engine and kind of model (dense, MoE…), widened
step by step (``POOLS``) until at least ``MIN_PEERS`` rows are found; speculative
runs (which may pass the bound) and rows above their bound (data errors) are not
peers. The interval is distribution-free: between the k-th lowest and k-th highest
peer share, k = ⌊0.1 (n + 1)⌋, a new exchangeable row falls with probability
(n + 1 − 2k) / (n + 1) ≥ 80% — hence ``MIN_PEERS`` = 9, the least n with k ≥ 1.
Rows of one rig are alike, so the check of that promise leaves a whole rig out
(``leave_one_rig_out``; benchmarks/bandwidth_bound.py, tests/results/test_estimate.py)."""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

MIN_PEERS = 9
LEVEL = 0.8
# Which facts two rows must share to be peers, most alike first.
POOLS: tuple[tuple[str, ...], ...] = (
    ("family", "engine", "kind"),
    ("family", "kind"),
    ("family",),
    ("vendor", "engine", "kind"),
    ("vendor",),
)


@dataclass(frozen=True)
class Observation:
    """One measured or reported decode figure with its bound."""

    rig_key: str
    family: str
    vendor: str
    engine: str
    kind: str
    bound_tokens_per_s: float
    decode_tokens_per_s: float
    label: str = ""

    @property
    def share(self) -> float:
        return self.decode_tokens_per_s / self.bound_tokens_per_s


@dataclass(frozen=True)
class Estimate:
    """``tokens_per_s`` (the bound × the peers' median share) within [low, high]."""

    tokens_per_s: float
    low: float
    high: float
    bound_tokens_per_s: float
    share_median: float
    share_low: float
    share_high: float
    n: int
    rigs: int
    pool: str


def interval(values: Sequence[float], level: float = LEVEL) -> tuple[float, float, float]:
    """Return (low, median, high): the order statistics a new value from the same
    distribution falls between with probability ≥ ``level``; needs len ≥ 1."""
    ordered = sorted(values)
    n = len(ordered)
    k = max(int((1 - level) / 2 * (n + 1)), 1)
    k = min(k, (n + 1) // 2)
    return ordered[k - 1], statistics.median(ordered), ordered[n - k]


def peers(observations: Iterable[Observation], *, exclude_rig: str = "") -> list[Observation]:
    """Return the rows an estimate may learn from: below their bound, not of ``exclude_rig``."""
    return [o for o in observations if o.share <= 1 and o.rig_key != exclude_rig]


def estimate(
    bound_tokens_per_s: float,
    observations: Iterable[Observation],
    *,
    family: str,
    vendor: str,
    engine: str,
    kind: str,
    exclude_rig: str = "",
) -> Estimate | None:
    """Return the estimate for a bound from the closest pool of at least MIN_PEERS
    peers; None when no pool is that large."""
    pool_rows = peers(observations, exclude_rig=exclude_rig)
    wanted = {"family": family, "vendor": vendor, "engine": engine, "kind": kind}
    for keys in POOLS:
        if any(not wanted[k] for k in keys):
            continue
        found = [o for o in pool_rows if all(getattr(o, k) == wanted[k] for k in keys)]
        if len(found) >= MIN_PEERS:
            low, median, high = interval([o.share for o in found])
            return Estimate(
                tokens_per_s=bound_tokens_per_s * median,
                low=bound_tokens_per_s * low,
                high=bound_tokens_per_s * high,
                bound_tokens_per_s=bound_tokens_per_s,
                share_median=median,
                share_low=low,
                share_high=high,
                n=len(found),
                rigs=len({o.rig_key for o in found}),
                pool=", ".join(wanted[k] for k in keys),
            )
    return None


@dataclass(frozen=True)
class HeldOut:
    observation: Observation
    estimate: Estimate

    @property
    def inside(self) -> bool:
        return self.estimate.low <= self.observation.decode_tokens_per_s <= self.estimate.high

    @property
    def abs_pct_error(self) -> float:
        return (
            abs(self.estimate.tokens_per_s - self.observation.decode_tokens_per_s)
            / self.observation.decode_tokens_per_s
            * 100
        )


def leave_one_rig_out(observations: Sequence[Observation]) -> list[HeldOut]:
    """Return, for each row below its bound, the estimate made without its rig's rows
    (rows no pool can estimate are left out)."""
    held = []
    for row in peers(observations):
        found = estimate(
            row.bound_tokens_per_s,
            observations,
            family=row.family,
            vendor=row.vendor,
            engine=row.engine,
            kind=row.kind,
            exclude_rig=row.rig_key,
        )
        if found is not None:
            held.append(HeldOut(row, found))
    return held

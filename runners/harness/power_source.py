"""Where a rig's power, energy and VRAM figures come from: one interface, several sources.

``PowerSource`` is what the harness asks of any of them (open, the GPUs it sees, a
measuring window, close). NVML (``power.PowerMonitor``) is the one implemented and
tested here; AMD (amdsmi / rocm-smi) or Apple (powermetrics) sources go beside it in
``SOURCES``, tried in order. Without any, ``open_power_source`` returns a ``NoPowerSource``
that says why, and the run goes on with those figures empty (None, never 0):
``UNMEASURED_WITHOUT_POWER`` names them so the runner can tell the owner.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from types import TracebackType
from typing import Any, Protocol

from runners.harness.power import PowerMonitor, PowerReading

# The run's figures that need a power source; without one they are posted as null.
UNMEASURED_WITHOUT_POWER = (
    "energy_j",
    "power_w_mean",
    "power_w_peak",
    "vram_peak_mib",
    "tokens_per_kwh",
    "GPU temperature, SM clock and throttle reasons",
)


class PowerWindowLike(Protocol):
    """A measuring window: a context manager whose ``reading`` is set on exit."""

    reading: PowerReading

    def __enter__(self) -> Any: ...

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None: ...


class PowerSource(Protocol):
    """What the harness asks of a power source (NVML, and any added beside it).

    ``available`` is False with ``reason`` saying why when the source cannot measure;
    ``gpus()`` returns one dict per GPU (index, name, vram_mib, power_limit_w, driver,
    cuda), [] when unavailable; ``has_energy_counter()`` whether every GPU has its own
    energy counter (else energy is integrated from sampled power)."""

    name: str
    available: bool
    reason: str | None

    def open(self) -> Any: ...

    def close(self) -> None: ...

    def gpus(self) -> list[dict[str, Any]]: ...

    def has_energy_counter(self) -> bool: ...

    def window(self) -> PowerWindowLike: ...

    def __enter__(self) -> Any: ...

    def __exit__(self, *exc: object) -> None: ...


class _EmptyWindow:
    def __init__(self, reason: str | None) -> None:
        self.reading = PowerReading(available=False, reason=reason)

    def __enter__(self) -> _EmptyWindow:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        return None


class NoPowerSource:
    """No source could measure on this machine; ``reason`` says why, source by source."""

    name = "none"

    def __init__(self, reason: str) -> None:
        self.available = False
        self.reason: str | None = reason

    def open(self) -> NoPowerSource:
        return self

    def close(self) -> None:
        return None

    def gpus(self) -> list[dict[str, Any]]:
        return []

    def has_energy_counter(self) -> bool:
        return False

    def window(self) -> _EmptyWindow:
        return _EmptyWindow(self.reason)

    def __enter__(self) -> NoPowerSource:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


# Tried in this order; the first that opens with a GPU is used.
SOURCES: list[Callable[[], PowerSource]] = [PowerMonitor]


def open_power_source(sources: Sequence[Callable[[], PowerSource]] | None = None) -> PowerSource:
    """Return the first source (of ``sources``, default ``SOURCES``) that opens and sees a
    GPU, opened; else a NoPowerSource whose reason joins each source's ``name: reason``."""
    reasons = []
    for make in SOURCES if sources is None else sources:
        source = make()
        source.open()
        if source.available:
            return source
        reasons.append(f"{source.name}: {source.reason}")
    return NoPowerSource("; ".join(reasons) or "no power source is configured")


def unmeasured_text(source: PowerSource) -> str:
    """Return the line that tells the owner what a run on this source cannot measure, '' when it can."""
    if source.available:
        return ""
    return f"no power source ({source.reason}): {', '.join(UNMEASURED_WITHOUT_POWER)} will be empty"

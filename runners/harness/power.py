"""GPU power, energy, memory and clocks through NVML (the ``pynvml`` module of nvidia-ml-py).

A background thread samples every GPU at ``interval_s`` (20 Hz by default,
≥ 10 Hz required) while a measurement runs; the GPU's own energy counter is
used for joules where it has one (Volta and later), the integral of the
sampled power elsewhere. Without NVML or a GPU every figure is None — never 0 —
and ``reason`` says why. ``pynvml`` is imported by name at ``open()`` only, so
tests can put a fake module in ``sys.modules`` at that one boundary.
"""

from __future__ import annotations

import importlib
import threading
import time
from dataclasses import asdict, dataclass, field
from types import ModuleType, TracebackType
from typing import Any

# Bits of nvmlDeviceGetCurrentClocksThrottleReasons (nvml.h), named as NVML names them.
THROTTLE_REASONS = {
    0x1: "gpu_idle",
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
}
_NVML_TEMPERATURE_GPU = 0
_NVML_CLOCK_SM = 1
_MIB = 1024 * 1024


def throttle_names(mask: int) -> list[str]:
    """Return the names of the reasons set in ``mask``, lowest bit first."""
    return [name for bit, name in THROTTLE_REASONS.items() if mask & bit]


@dataclass
class GpuReading:
    index: int
    name: str
    energy_j: float | None = None
    power_w_mean: float | None = None
    power_w_peak: float | None = None
    vram_peak_mib: float | None = None
    temperature_c_max: float | None = None
    sm_clock_mhz_mean: float | None = None
    power_limit_w: float | None = None
    throttle_reasons: list[str] = field(default_factory=list)


@dataclass
class PowerReading:
    """Figures for one measured window, summed over GPUs (VRAM: sum of per-GPU peaks)."""

    available: bool
    reason: str | None = None
    duration_s: float | None = None
    energy_j: float | None = None
    energy_source: str | None = None  # counter | integrated
    power_w_mean: float | None = None
    power_w_peak: float | None = None
    vram_peak_mib: float | None = None
    n_samples: int = 0
    sample_rate_hz: float | None = None
    gpus: list[GpuReading] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class PowerMonitor:
    """The NVML power source (runners/harness/power_source.py's PowerSource): owns the
    NVML session; ``window()`` measures one request."""

    name = "nvml"

    def __init__(self, *, interval_s: float = 0.05) -> None:
        if interval_s > 0.1:
            raise ValueError("interval_s must be at most 0.1 (10 Hz)")
        self.interval_s = interval_s
        self.available = False
        self.reason: str | None = "NVML not opened"
        self._nvml: Any = None
        self._handles: list[Any] = []

    def open(self) -> PowerMonitor:
        """Initialise NVML; on any failure stay unavailable with the reason. Return self."""
        try:
            nvml: ModuleType = importlib.import_module("pynvml")
        except ImportError as exc:
            self.reason = f"pynvml (nvidia-ml-py) is not installed: {exc}"
            return self
        try:
            nvml.nvmlInit()
            count = nvml.nvmlDeviceGetCount()
            handles = [nvml.nvmlDeviceGetHandleByIndex(i) for i in range(count)]
        except Exception as exc:  # NVMLError_LibraryNotFound, DriverNotLoaded, …
            self.reason = f"NVML unavailable: {exc}"
            return self
        if not handles:
            self.reason = "NVML found no GPU"
            _quietly(nvml.nvmlShutdown)
            return self
        self._nvml, self._handles = nvml, handles
        self.available, self.reason = True, None
        return self

    def close(self) -> None:
        if self.available:
            _quietly(self._nvml.nvmlShutdown)
        self.available, self._nvml, self._handles = False, None, []
        self.reason = "NVML closed"

    def __enter__(self) -> PowerMonitor:
        return self if self.available else self.open()  # open_power_source() may have opened it

    def __exit__(self, *exc: object) -> None:
        self.close()

    def gpus(self) -> list[dict[str, Any]]:
        """Return name, VRAM, driver and CUDA version per GPU (for the fingerprint); [] without NVML."""
        if not self.available:
            return []
        nvml = self._nvml
        driver = _text(_quietly(nvml.nvmlSystemGetDriverVersion))
        cuda_raw = _quietly(nvml.nvmlSystemGetCudaDriverVersion)
        cuda = f"{cuda_raw // 1000}.{cuda_raw % 1000 // 10}" if isinstance(cuda_raw, int) else None
        out = []
        for index, handle in enumerate(self._handles):
            memory = _quietly(nvml.nvmlDeviceGetMemoryInfo, handle)
            limit_mw = _quietly(nvml.nvmlDeviceGetEnforcedPowerLimit, handle)
            out.append(
                {
                    "index": index,
                    "name": _text(_quietly(nvml.nvmlDeviceGetName, handle)),
                    "vram_mib": round(memory.total / _MIB) if memory is not None else None,
                    "power_limit_w": limit_mw / 1000.0 if limit_mw is not None else None,
                    "driver": driver,
                    "cuda": cuda,
                }
            )
        return out

    def has_energy_counter(self) -> bool:
        """Return True when every GPU reads its own energy counter (Volta and later);
        False without NVML, or when some GPU's energy is integrated from sampled power."""
        if not self.available:
            return False
        readings = [_quietly(self._nvml.nvmlDeviceGetTotalEnergyConsumption, h) for h in self._handles]
        return all(r is not None for r in readings)

    def window(self) -> PowerWindow:
        return PowerWindow(self)


class PowerWindow:
    """Context manager: samples on a thread between enter and exit; ``reading`` after exit."""

    def __init__(self, monitor: PowerMonitor) -> None:
        self.monitor = monitor
        self.reading = PowerReading(available=False, reason=monitor.reason)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        n = len(monitor._handles)
        self._ticks: list[tuple[float, list[float | None]]] = []
        self._vram_peak: list[float | None] = [None] * n
        self._temp_max: list[float | None] = [None] * n
        self._clocks: list[list[float]] = [[] for _ in range(n)]
        self._throttle: list[int] = [0] * n
        self._energy_start: list[float | None] = [None] * n
        self._t0 = 0.0
        self._reasons_func: Any = None

    def __enter__(self) -> PowerWindow:
        if not self.monitor.available:
            return self
        nvml = self.monitor._nvml
        self._energy_start = [_quietly(nvml.nvmlDeviceGetTotalEnergyConsumption, h) for h in self.monitor._handles]
        # Newer drivers name it "event reasons"; the bits are the same.
        self._reasons_func = getattr(nvml, "nvmlDeviceGetCurrentClocksEventReasons", None) or getattr(
            nvml, "nvmlDeviceGetCurrentClocksThrottleReasons", None
        )
        self._t0 = time.perf_counter()
        self._tick()
        self._thread = threading.Thread(target=self._run, name="nvml-power", daemon=True)
        self._thread.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._thread is None:
            return
        self._stop.set()
        self._thread.join()
        self._tick()
        self.reading = self._summarise(time.perf_counter() - self._t0)

    def _run(self) -> None:
        while not self._stop.wait(self.monitor.interval_s):
            self._tick()

    def _tick(self) -> None:
        nvml = self.monitor._nvml
        powers: list[float | None] = []
        for i, handle in enumerate(self.monitor._handles):
            power_mw = _quietly(nvml.nvmlDeviceGetPowerUsage, handle)
            powers.append(power_mw / 1000.0 if power_mw is not None else None)
            memory = _quietly(nvml.nvmlDeviceGetMemoryInfo, handle)
            temp = _quietly(nvml.nvmlDeviceGetTemperature, handle, _NVML_TEMPERATURE_GPU)
            clock = _quietly(nvml.nvmlDeviceGetClockInfo, handle, _NVML_CLOCK_SM)
            mask = _quietly(self._reasons_func, handle)
            with self._lock:
                if memory is not None:
                    self._vram_peak[i] = _max(self._vram_peak[i], memory.used / _MIB)
                if temp is not None:
                    self._temp_max[i] = _max(self._temp_max[i], float(temp))
                if clock is not None:
                    self._clocks[i].append(float(clock))
                if isinstance(mask, int):
                    self._throttle[i] |= mask
        with self._lock:
            self._ticks.append((time.perf_counter(), powers))

    def _summarise(self, duration_s: float) -> PowerReading:
        nvml = self.monitor._nvml
        gpus = []
        total_energy: float | None = 0.0
        all_counters = True
        for i, handle in enumerate(self.monitor._handles):
            series = [(t, watts) for t, p in self._ticks if (watts := p[i]) is not None]
            mean, peak, integral = _series_stats(series)
            end = _quietly(nvml.nvmlDeviceGetTotalEnergyConsumption, handle)
            start = self._energy_start[i]
            if start is not None and end is not None and end >= start:
                energy = (end - start) / 1000.0  # mJ → J
            else:
                all_counters = False
                energy = integral
            if total_energy is not None:
                total_energy = None if energy is None else total_energy + energy
            limit_mw = _quietly(nvml.nvmlDeviceGetEnforcedPowerLimit, handle)
            clocks = self._clocks[i]
            gpus.append(
                GpuReading(
                    index=i,
                    name=_text(_quietly(nvml.nvmlDeviceGetName, handle)) or f"GPU {i}",
                    energy_j=energy,
                    power_w_mean=mean,
                    power_w_peak=peak,
                    vram_peak_mib=self._vram_peak[i],
                    temperature_c_max=self._temp_max[i],
                    sm_clock_mhz_mean=sum(clocks) / len(clocks) if clocks else None,
                    power_limit_w=limit_mw / 1000.0 if limit_mw is not None else None,
                    throttle_reasons=throttle_names(self._throttle[i]),
                )
            )
        summed = [sum(v for v in p if v is not None) for _, p in self._ticks if any(v is not None for v in p)]
        means = [g.power_w_mean for g in gpus]
        vram = [g.vram_peak_mib for g in gpus]
        return PowerReading(
            available=True,
            duration_s=duration_s,
            energy_j=total_energy,
            energy_source=None if total_energy is None else ("counter" if all_counters else "integrated"),
            power_w_mean=None if any(m is None for m in means) else sum(m for m in means if m is not None),
            power_w_peak=max(summed) if summed else None,
            vram_peak_mib=None if any(v is None for v in vram) else sum(v for v in vram if v is not None),
            n_samples=len(self._ticks),
            sample_rate_hz=(len(self._ticks) - 1) / duration_s if duration_s > 0 and len(self._ticks) > 1 else None,
            gpus=gpus,
        )


def _series_stats(series: list[tuple[float, float]]) -> tuple[float | None, float | None, float | None]:
    """Return (time-weighted mean W, peak W, integral J) of (t, watts) points."""
    if not series:
        return None, None, None
    peak = max(p for _, p in series)
    if len(series) == 1:
        return series[0][1], peak, None
    integral = sum((t1 - t0) * (p0 + p1) / 2 for (t0, p0), (t1, p1) in zip(series, series[1:], strict=False))
    span = series[-1][0] - series[0][0]
    mean = integral / span if span > 0 else sum(p for _, p in series) / len(series)
    return mean, peak, integral


def _quietly(func: Any, *args: Any) -> Any:
    """Return ``func(*args)``, or None when NVML says the query is not supported."""
    try:
        return func(*args)
    except Exception:
        return None


def _text(value: Any) -> str | None:
    if value is None:
        return None
    return value.decode() if isinstance(value, bytes) else str(value)


def _max(current: float | None, value: float) -> float:
    return value if current is None else max(current, value)

"""The NVML power sampler.

There is no GPU on this machine, so these tests put a fake ``pynvml`` module in
``sys.modules`` — the one boundary the sampler imports NVML through — and
nothing else is faked. The same code against real NVML runs in test_gpu.py.
"""

from __future__ import annotations

import statistics
import sys
import time
import types
from typing import Any

import pytest

from runners.harness.power import PowerMonitor, throttle_names
from tests.fixtures.waiting import wait_until


class FakeNVMLError(Exception):
    pass


def fake_pynvml(*, watts: list[float], energy_counter: list[bool], init_error: str = "") -> types.ModuleType:
    """Return a module with NVML's functions: constant power per GPU, a millijoule
    counter that advances with wall time where the GPU has one, rising VRAM use."""
    nvml = types.ModuleType("pynvml")
    t0 = time.perf_counter()
    used = [0] * len(watts)
    nvml.NVMLError = FakeNVMLError  # type: ignore[attr-defined]

    def init() -> None:
        if init_error:
            raise FakeNVMLError(init_error)

    def energy(handle: int) -> int:
        if not energy_counter[handle]:
            raise FakeNVMLError("Not Supported")
        return int(5_000_000 + (time.perf_counter() - t0) * watts[handle] * 1000)

    def memory(handle: int) -> Any:
        used[handle] += 1
        return types.SimpleNamespace(total=24 * 1024**3, used=(1000 + used[handle]) * 1024**2)

    functions = {
        "nvmlInit": init,
        "nvmlShutdown": lambda: None,
        "nvmlDeviceGetCount": lambda: len(watts),
        "nvmlDeviceGetHandleByIndex": lambda i: i,
        "nvmlDeviceGetName": lambda h: b"NVIDIA GeForce RTX 3090",
        "nvmlDeviceGetPowerUsage": lambda h: int(watts[h] * 1000),
        "nvmlDeviceGetTotalEnergyConsumption": energy,
        "nvmlDeviceGetMemoryInfo": memory,
        "nvmlDeviceGetTemperature": lambda h, sensor: 60 + h,
        "nvmlDeviceGetClockInfo": lambda h, clock: 1800,
        "nvmlDeviceGetEnforcedPowerLimit": lambda h: 350_000,
        "nvmlDeviceGetCurrentClocksEventReasons": lambda h: 0x4 if h == 0 else 0,
        "nvmlSystemGetDriverVersion": lambda: "580.65",
        "nvmlSystemGetCudaDriverVersion": lambda: 13000,
    }
    for name, func in functions.items():
        setattr(nvml, name, func)
    return nvml


def test_it_samples_two_gpus_at_more_than_10_hz(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml(watts=[150.0, 100.0], energy_counter=[True, False]))
    with PowerMonitor() as monitor, monitor.window() as window:
        wait_until(lambda: len(window._ticks) >= 12, 30, "a dozen power samples")
    reading = window.reading
    assert reading.available and reading.reason is None
    assert monitor.interval_s <= 0.1 and reading.n_samples >= 13
    assert reading.sample_rate_hz == pytest.approx((reading.n_samples - 1) / reading.duration_s)
    # The sampler's pace, not the machine's: a tick starved by a busy CPU now and then
    # does not move the median gap between samples.
    times = [t for t, _ in window._ticks]
    assert statistics.median(b - a for a, b in zip(times, times[1:], strict=False)) <= 0.1
    assert reading.duration_s is not None
    gpu0, gpu1 = reading.gpus
    # GPU 0 has an energy counter; GPU 1's joules are the integral of its samples.
    assert gpu0.energy_j == pytest.approx(150.0 * reading.duration_s, rel=0.05)
    # (the trapezoids span the first tick to the last: a busy CPU delays a tick, never the sum)
    assert gpu1.energy_j == pytest.approx(100.0 * (times[-1] - times[0]), rel=1e-9)
    assert reading.energy_source == "integrated"
    assert reading.power_w_mean == pytest.approx(250.0)
    assert reading.power_w_peak == pytest.approx(250.0)
    assert gpu0.vram_peak_mib is not None and gpu0.vram_peak_mib > 1000
    assert reading.vram_peak_mib == pytest.approx(gpu0.vram_peak_mib + (gpu1.vram_peak_mib or 0))
    assert gpu0.throttle_reasons == ["sw_power_cap"] and gpu1.throttle_reasons == []
    assert gpu1.temperature_c_max == 61.0
    assert gpu0.sm_clock_mhz_mean == 1800.0
    assert gpu0.power_limit_w == 350.0


def test_it_uses_the_energy_counter_when_every_gpu_has_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml(watts=[200.0], energy_counter=[True]))
    with PowerMonitor() as monitor, monitor.window() as window:
        time.sleep(0.2)
    assert window.reading.energy_source == "counter"
    assert window.reading.energy_j == pytest.approx(200.0 * (window.reading.duration_s or 0), rel=0.05)


def test_it_lists_gpus_for_the_fingerprint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml(watts=[150.0], energy_counter=[True]))
    with PowerMonitor() as monitor:
        assert monitor.gpus() == [
            {
                "index": 0,
                "name": "NVIDIA GeForce RTX 3090",
                "vram_mib": 24576,
                "power_limit_w": 350.0,
                "driver": "580.65",
                "cuda": "13.0",
            }
        ]


def test_it_gives_none_and_the_reason_when_the_driver_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = fake_pynvml(watts=[1.0], energy_counter=[True], init_error="Driver Not Loaded")
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    with PowerMonitor() as monitor, monitor.window() as window:
        pass
    reading = window.reading
    assert not reading.available
    assert reading.reason == "NVML unavailable: Driver Not Loaded"
    assert (reading.energy_j, reading.power_w_mean, reading.power_w_peak, reading.vram_peak_mib) == (None,) * 4
    assert monitor.gpus() == []


def test_it_gives_the_reason_when_pynvml_is_not_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)
    monitor = PowerMonitor().open()
    assert not monitor.available
    assert monitor.reason is not None and monitor.reason.startswith("pynvml (nvidia-ml-py) is not installed")


def test_it_names_throttle_reasons() -> None:
    assert throttle_names(0x4 | 0x40) == ["sw_power_cap", "hw_thermal_slowdown"]
    assert throttle_names(0) == []


def test_it_refuses_a_rate_below_10_hz() -> None:
    with pytest.raises(ValueError, match="10 Hz"):
        PowerMonitor(interval_s=0.5)

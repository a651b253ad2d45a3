"""The power-source interface: NVML when it opens, else a NoPowerSource that says why
and which figures a run cannot measure. No GPU here: NVML is simulated at its one
boundary, the ``pynvml`` module (a fake in ``sys.modules``, or none at all)."""

from __future__ import annotations

import sys

import pytest

from runners.harness.power import PowerMonitor
from runners.harness.power_source import NoPowerSource, open_power_source, unmeasured_text
from tests.runners.test_power import fake_pynvml


def test_it_uses_nvml_when_nvml_sees_a_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml(watts=[150.0], energy_counter=[True]))
    with open_power_source() as source:
        assert isinstance(source, PowerMonitor) and source.available
        assert source.has_energy_counter()
        assert [g["name"] for g in source.gpus()] == ["NVIDIA GeForce RTX 3090"]
        with source.window() as window:
            pass
        assert window.reading.available
        assert unmeasured_text(source) == ""


def test_a_gpu_without_an_energy_counter_is_told_apart(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml(watts=[150.0, 90.0], energy_counter=[True, False]))
    with open_power_source() as source:
        assert source.available and not source.has_energy_counter()


@pytest.mark.parametrize(
    ("module", "said"),
    [(None, "nvml: pynvml (nvidia-ml-py) is not installed"), ("driver", "nvml: NVML unavailable: Driver Not Loaded")],
)
def test_without_nvml_the_run_goes_on_and_names_what_it_cannot_measure(
    monkeypatch: pytest.MonkeyPatch, module: str | None, said: str
) -> None:
    fake = None if module is None else fake_pynvml(watts=[1.0], energy_counter=[True], init_error="Driver Not Loaded")
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    with open_power_source() as source:
        assert isinstance(source, NoPowerSource) and not source.available
        assert source.reason is not None and source.reason.startswith(said)
        assert source.gpus() == [] and not source.has_energy_counter()
        with source.window() as window:
            pass
    assert not window.reading.available and window.reading.energy_j is None
    line = unmeasured_text(source)
    assert said in line and "energy_j" in line and "power_w_mean" in line


def test_a_second_source_is_tried_when_the_first_cannot_measure(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where NVML has no GPU (an AMD or Apple rig) the next source in the list answers."""
    monkeypatch.setitem(sys.modules, "pynvml", None)

    class OtherSource(NoPowerSource):
        name = "other"

        def __init__(self) -> None:
            super().__init__("")
            self.available, self.reason = True, None

    source = open_power_source([PowerMonitor, OtherSource])
    assert isinstance(source, OtherSource)
    none = open_power_source([PowerMonitor])
    assert isinstance(none, NoPowerSource) and none.reason is not None and none.reason.startswith("nvml: ")

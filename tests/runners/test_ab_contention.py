"""Contention measured around a repetition (runners/harness/contention.py), what it
means for judging (ab_design.contention_call), and the design a rig's memory
allows (ab_block.design_for). /proc is written by the test where the figures must
be exact (an oracle the test sets); NVML is a fake module, as there is no GPU on
this machine (the boundary that cannot exist here)."""

from __future__ import annotations

import os
import subprocess
import sys
import types
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from runners.ab_design import AbDesign, ContentionCall, contention_call
from runners.builds.ab_block import BlockRecord, available_ram_bytes, design_for
from runners.config import ServerConfig
from runners.env import RigEnvError
from runners.harness.contention import ContentionMeter, ContentionReading, Gpus, combine, process_ticks
from tests.fixtures.waiting import wait_until

MIB = 1024 * 1024


def _write_proc(root: Path, *, busy: int, idle: int, ours: dict[int, int]) -> None:
    # cpu user nice system idle iowait irq softirq steal guest guest_nice
    (root / "stat").write_text(f"cpu  {busy} 0 0 {idle} 7 0 0 0 0 0\ncpu0 0 0 0 0 0 0 0 0 0 0\n")
    for pid, ticks in ours.items():
        (root / str(pid)).mkdir(exist_ok=True)
        # comm with a space and a ')' in it: the fields are counted after the last ')'
        fields = ["S", *["0"] * 10, str(ticks), "0", "0", "0"]
        (root / str(pid) / "stat").write_text(f"{pid} (llama server) ) " + " ".join(fields) + "\n")


def test_others_cpu_is_the_machine_busy_time_less_ours(tmp_path: Path) -> None:
    tck = os.sysconf("SC_CLK_TCK")
    _write_proc(tmp_path, busy=1000, idle=5000, ours={os.getpid(): 10, 4242: 100})
    meter = ContentionMeter(lambda: [4242], proc=tmp_path)
    with meter.window() as window:
        # 3 s of CPU on the machine, of which the server used 1 s and we 0.5 s
        _write_proc(tmp_path, busy=1000 + 3 * tck, idle=5100, ours={os.getpid(): 10 + tck // 2, 4242: 100 + tck})
    assert window.reading.others_cpu_s == pytest.approx(1.5)
    assert window.reading.gpu_others_util_pct is None  # no GPU meter: not measured, never 0


def test_a_gone_process_counts_nothing_and_a_foreign_proc_gives_no_figure(tmp_path: Path) -> None:
    assert process_ticks(999_999_999, tmp_path) == 0
    (tmp_path / "stat").write_text("intr 1 2 3\n")
    with ContentionMeter(lambda: [], proc=tmp_path).window() as window:
        pass
    assert window.reading.others_cpu_s is None and window.reading.others_cpu_share is None


def test_a_busy_process_beside_us_is_seen_on_the_real_proc() -> None:
    hog = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        wait_until(lambda: process_ticks(hog.pid) > 0, 20, "the hog to use CPU")
        meter = ContentionMeter(lambda: [])
        mine = ContentionMeter(lambda: [hog.pid])  # the hog counted as ours: left out

        def seen() -> bool:
            with meter.window() as w, mine.window() as m:
                _busy_wait_s(0.2)
            assert w.reading.others_cpu_s is not None and m.reading.others_cpu_s is not None
            return w.reading.others_cpu_s > m.reading.others_cpu_s

        wait_until(seen, 30, "the hog's CPU time in the window")
    finally:
        hog.kill()
        hog.wait(timeout=10)


def _busy_wait_s(seconds: float) -> None:
    import time

    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


def fake_pynvml(*, procs: list[tuple[int, int]], util: list[tuple[int, int]]) -> types.ModuleType:
    nvml = types.ModuleType("pynvml")
    nvml.nvmlInit = lambda: None  # type: ignore[attr-defined]
    nvml.nvmlShutdown = lambda: None  # type: ignore[attr-defined]
    nvml.nvmlDeviceGetCount = lambda: 1  # type: ignore[attr-defined]
    nvml.nvmlDeviceGetHandleByIndex = lambda i: f"gpu{i}"  # type: ignore[attr-defined]
    nvml.nvmlDeviceGetComputeRunningProcesses = lambda h: [  # type: ignore[attr-defined]
        SimpleNamespace(pid=pid, usedGpuMemory=mib * MIB) for pid, mib in procs
    ]
    nvml.nvmlDeviceGetProcessUtilization = lambda h, since: [  # type: ignore[attr-defined]
        SimpleNamespace(pid=pid, smUtil=pct, timeStamp=since + 1) for pid, pct in util
    ]
    nvml.nvmlDeviceGetMemoryInfo = lambda h: SimpleNamespace(free=3000 * MIB)  # type: ignore[attr-defined]
    return nvml


def test_other_processes_on_the_gpu_are_counted_and_ours_are_not(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml(procs=[(10, 4000), (20, 1500)], util=[(10, 90), (20, 35)]))
    gpus = Gpus()
    assert gpus.available
    assert gpus.others([10]) == (35.0, 1500.0)


def test_without_nvml_the_gpu_figures_are_unknown(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)
    gpus = Gpus()
    assert not gpus.available and "NVML" in gpus.reason
    assert gpus.others([]) == (None, None)


@pytest.mark.parametrize(
    ("a", "b", "gpu", "call"),
    [
        (0.02, 0.03, (None, None), ContentionCall.QUIET),
        (0.02, 0.20, (None, None), ContentionCall.UNEVEN),
        (0.02, 0.60, (None, None), ContentionCall.HEAVY),
        (0.02, 0.03, (0.0, 50.0), ContentionCall.HEAVY),
        (0.02, 0.03, (0.0, 15.0), ContentionCall.UNEVEN),
        (None, 0.03, (None, None), ContentionCall.UNKNOWN),
    ],
)
def test_the_contention_call(a: Any, b: Any, gpu: tuple[Any, Any], call: ContentionCall) -> None:
    assert contention_call(a_cpu_share=a, b_cpu_share=b, a_gpu_util_pct=gpu[0], b_gpu_util_pct=gpu[1]) == call


def test_a_rigs_own_heavy_limit_decides_what_is_held_back(monkeypatch: pytest.MonkeyPatch) -> None:
    def block(share: float) -> BlockRecord:
        reading = ContentionReading(wall_s=1.0, others_cpu_s=share, others_cpu_share=share)
        return BlockRecord(index=0, contention_a=reading, contention_b=reading)

    assert block(0.6).contention() == ContentionCall.HEAVY  # the default limit, a quarter of the machine
    monkeypatch.setenv("RIGBOARD_AB_HEAVY_CPU_SHARE", "0.7")
    assert (block(0.6).contention(), block(0.8).contention()) == (ContentionCall.QUIET, ContentionCall.HEAVY)
    monkeypatch.setenv("RIGBOARD_AB_HEAVY_CPU_SHARE", "most")
    with pytest.raises(RigEnvError, match="RIGBOARD_AB_HEAVY_CPU_SHARE must be a number"):
        block(0.6).contention()


def test_readings_combine_over_their_wall_time() -> None:
    cpus = os.cpu_count() or 1
    total = combine([ContentionReading(1.0, 0.5, None, 10.0, 100.0), ContentionReading(3.0, 1.5, None, 30.0, 50.0)])
    assert total.wall_s == 4.0 and total.others_cpu_s == 2.0
    assert total.others_cpu_share == pytest.approx(2.0 / (4.0 * cpus))
    assert (total.gpu_others_util_pct, total.gpu_others_mem_mib) == (30.0, 100.0)


def test_the_fallback_is_taken_when_two_copies_do_not_fit_in_ram(tmp_path: Path) -> None:
    model = tmp_path / "model.gguf"
    with model.open("wb") as f:
        f.truncate(300 * MIB)  # sparse: its size is what counts
    meminfo = tmp_path / "meminfo"
    meminfo.write_text(f"MemTotal: 8000000 kB\nMemAvailable: {1000 * 1024} kB\n")
    assert available_ram_bytes(meminfo) == 1000 * MIB
    tight = design_for(ServerConfig(model=str(model)), meminfo=meminfo)
    assert tight.design == AbDesign.RUN_ABBA and "1000 MiB free" in tight.reason
    meminfo.write_text(f"MemAvailable: {2000 * 1024} kB\n")
    assert design_for(ServerConfig(model=str(model)), meminfo=meminfo).design == AbDesign.INTERLEAVED


def test_an_offloaded_model_is_weighed_against_the_gpus_free_vram(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml(procs=[], util=[]))  # 3000 MiB free
    model = tmp_path / "model.gguf"
    with model.open("wb") as f:
        f.truncate(1300 * MIB)  # two copies + 512 MiB: 3112 MiB
    roomy = tmp_path / "meminfo"
    roomy.write_text(f"MemAvailable: {64000 * 1024} kB\n")
    on_gpu = design_for(ServerConfig(model=str(model), n_gpu_layers=99), meminfo=roomy)
    assert on_gpu.design == AbDesign.RUN_ABBA and on_gpu.available_bytes == 3000 * MIB
    assert design_for(ServerConfig(model=str(model)), meminfo=roomy).design == AbDesign.INTERLEAVED

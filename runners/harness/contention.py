"""What else used the rig while a measurement ran: other processes' CPU time
(/proc), and on a GPU other processes' utilisation and memory (NVML).

Two builds can answer a busy machine differently (issue 36: a build 10% slower
alone decoded 5× faster than its baseline beside a CPU hog), so pairing cannot
cancel contention; it is measured around every repetition and the A/B rule
(runners/ab_design.py ``contention_call``) holds back what ran under
too much of it, or under different amounts on the two sides.

CPU: the machine's busy time from /proc/stat (every CPU's non-idle jiffies)
less this process's and the measured servers' own (/proc/<pid>/stat, children
included), over the window. Reading four small files a repetition, not every
process's, keeps the reading cheap beside a 0.2 s repetition. Kernel work
(interrupts, kswapd) counts as contention: it takes the same cores.

GPU: NVML's running compute processes (their memory) and per-process
utilisation samples; processes other than the servers are "others". No NVML
(no GPU, no driver, no pynvml): the GPU figures are None, never 0.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

PROC = Path("/proc")


@dataclass(frozen=True)
class ContentionReading:
    """Contention over one window: wall seconds, CPU seconds other processes
    used and that as a share of the machine's CPUs (0 idle, 1 every core busy),
    and on a GPU the others' peak SM utilisation (%) and memory (MiB), None
    where not measured."""

    wall_s: float
    others_cpu_s: float | None
    others_cpu_share: float | None
    gpu_others_util_pct: float | None = None
    gpu_others_mem_mib: float | None = None

    def as_dict(self) -> dict[str, float | None]:
        return {
            "wall_s": self.wall_s,
            "others_cpu_s": self.others_cpu_s,
            "others_cpu_share": self.others_cpu_share,
            "gpu_others_util_pct": self.gpu_others_util_pct,
            "gpu_others_mem_mib": self.gpu_others_mem_mib,
        }


def combine(readings: Iterable[ContentionReading]) -> ContentionReading:
    """Return one reading for several windows: their wall and CPU seconds summed,
    the share over the summed wall time, the GPU figures' maxima."""
    rs = list(readings)
    wall = sum(r.wall_s for r in rs)
    cpu_known = [r for r in rs if r.others_cpu_s is not None]
    cpu = sum(r.others_cpu_s or 0.0 for r in cpu_known) if cpu_known else None
    cpus = os.cpu_count() or 1
    known_wall = sum(r.wall_s for r in cpu_known)
    share = cpu / (known_wall * cpus) if cpu is not None and known_wall > 0 else None
    util = [r.gpu_others_util_pct for r in rs if r.gpu_others_util_pct is not None]
    mem = [r.gpu_others_mem_mib for r in rs if r.gpu_others_mem_mib is not None]
    return ContentionReading(wall, cpu, share, max(util) if util else None, max(mem) if mem else None)


def _ticks_per_s() -> int:
    return int(os.sysconf("SC_CLK_TCK"))


def machine_busy_ticks(proc: Path = PROC) -> int | None:
    """Return all CPUs' non-idle jiffies since boot (/proc/stat's cpu line less
    idle and iowait); None where /proc is not Linux's."""
    try:
        line = (proc / "stat").read_text().splitlines()[0].split()
    except (OSError, IndexError):
        return None
    if line[0] != "cpu":
        return None
    values = [int(v) for v in line[1:]]
    # user nice system idle iowait irq softirq steal [guest guest_nice: already in user/nice]
    return sum(values[:8]) - values[3] - values[4]


def process_ticks(pid: int, proc: Path = PROC) -> int:
    """Return a process's CPU jiffies, its waited-for children's included (0 if it is gone)."""
    try:
        text = (proc / str(pid) / "stat").read_text()
    except OSError:
        return 0
    # Fields after the command (which may hold spaces) are split after its ')'.
    fields = text[text.rfind(")") + 2 :].split()
    return sum(int(v) for v in fields[11:15])  # utime stime cutime cstime


class Gpus:
    """The others' use of the GPUs through NVML; ``available`` False (with
    ``reason``) without it. pynvml is imported here, at the boundary, so a test
    may put a fake in its place (no GPU on the test machine)."""

    def __init__(self) -> None:
        self.available, self.reason, self._nvml, self._handles = False, "", None, []
        self._last_seen: dict[int, int] = {}
        try:
            import pynvml  # type: ignore[import-not-found,import-untyped,unused-ignore]

            pynvml.nvmlInit()
            self._handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(pynvml.nvmlDeviceGetCount())]
            self._nvml = pynvml
            self.available = bool(self._handles)
            self.reason = "" if self._handles else "NVML sees no GPU"
        except Exception as exc:  # no pynvml, no driver: every failure means "not measured"
            self.reason = f"NVML unavailable: {exc}"

    def others(self, ours: Sequence[int]) -> tuple[float | None, float | None]:
        """Return (peak SM utilisation %, memory MiB) of processes not in ``ours``
        since the last call, over all GPUs; (None, None) without NVML."""
        nvml = self._nvml
        if nvml is None:
            return None, None
        util, mem = 0.0, 0.0
        for i, handle in enumerate(self._handles):
            try:
                procs = nvml.nvmlDeviceGetComputeRunningProcesses(handle)
            except Exception:  # noqa: S112 - a GPU that cannot list processes has none to count
                procs = []
            mem += sum((p.usedGpuMemory or 0) / 2**20 for p in procs if p.pid not in ours)
            try:
                samples = nvml.nvmlDeviceGetProcessUtilization(handle, self._last_seen.get(i, 0))
            except Exception:  # NVML_ERROR_NOT_FOUND: no samples since the last call
                samples = []
            for s in samples:
                self._last_seen[i] = max(self._last_seen.get(i, 0), int(s.timeStamp))
                if s.pid not in ours:
                    util = max(util, float(s.smUtil))
        return util, mem

    def close(self) -> None:
        if self._nvml is not None:
            self._nvml.nvmlShutdown()
            self._nvml = None


class ContentionMeter:
    """Measures contention in windows (``with meter.window() as w: …; w.reading``),
    the processes in ``ours()`` (this one and the servers measured) left out."""

    def __init__(self, ours: Callable[[], Sequence[int]], *, gpus: Gpus | None = None, proc: Path = PROC) -> None:
        self.ours, self.gpus, self.proc = ours, gpus, proc

    def window(self) -> _Window:
        return _Window(self)

    def _our_ticks(self) -> int:
        return sum(process_ticks(pid, self.proc) for pid in {os.getpid(), *self.ours()})


class _Window:
    reading: ContentionReading

    def __init__(self, meter: ContentionMeter) -> None:
        self.meter = meter

    def __enter__(self) -> _Window:
        m = self.meter
        if m.gpus is not None:
            m.gpus.others(m.ours())  # start the utilisation samples from now
        self._busy, self._ours, self._t = machine_busy_ticks(m.proc), m._our_ticks(), time.monotonic()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        m = self.meter
        wall = time.monotonic() - self._t
        busy = machine_busy_ticks(m.proc)
        ours = m._our_ticks()
        cpu_s: float | None = None
        share: float | None = None
        if busy is not None and self._busy is not None:
            cpu_s = max(0.0, ((busy - self._busy) - (ours - self._ours)) / _ticks_per_s())
            share = cpu_s / (wall * (os.cpu_count() or 1)) if wall > 0 else None
        util, mem = m.gpus.others(m.ours()) if m.gpus is not None else (None, None)
        self.reading = ContentionReading(wall, cpu_s, share, util, mem)


def reading_from(data: dict[str, Any]) -> ContentionReading:
    """Return a reading from its ``as_dict`` form (a report read back)."""
    return ContentionReading(
        float(data.get("wall_s") or 0.0),
        data.get("others_cpu_s"),
        data.get("others_cpu_share"),
        data.get("gpu_others_util_pct"),
        data.get("gpu_others_mem_mib"),
    )

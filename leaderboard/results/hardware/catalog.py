"""The hardware catalog: GPUs (memory size, bandwidth, peak FP16 tensor FLOP/s) and
CPUs (memory channels), one row per model with the vendor page it comes from.

A blank figure is "not stated" and stays so: a lookup of a card whose bandwidth the
catalog does not give returns no bandwidth, never a neighbour's. Names match after
dropping vendor words ("NVIDIA GeForce RTX 3090" is "RTX 3090"); a card sold with
several memory sizes at different speeds (RTX 3060 8/12 GB) needs the rig's VRAM to
choose, and without it has none."""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from runners.bandwidth.bound import Memory, system_bandwidth_gb_s

HERE = Path(__file__).resolve().parent
_VENDOR_WORDS = re.compile(r"\b(nvidia|geforce|amd|intel\(r\)|intel|\(r\)|\(tm\))\s*", re.I)
_DDR = re.compile(r"\b(?P<type>(?:LP)?DDR\d[XE]?)[- ](?P<mt>\d{4})\b", re.I)


def normalize(name: str) -> str:
    """Return a GPU name without vendor words, lower case, single-spaced."""
    return " ".join(_VENDOR_WORDS.sub(" ", name).lower().split())


def _float(cell: str) -> float | None:
    return float(cell) if cell.strip() else None


@dataclass(frozen=True)
class GpuSpec:
    name: str
    vendor: str
    family: str
    memory_gb: float | None
    memory_type: str
    bandwidth_gb_s: float | None
    fp16_tensor_tflops: float | None
    source_url: str
    note: str

    def memory(self, count: int = 1) -> Memory | None:
        """Return this card's memory (``count`` cards read in parallel); None when its bandwidth is not stated."""
        if self.bandwidth_gb_s is None:
            return None
        label = f"{count}× {self.name}" if count > 1 else self.name
        return Memory(label, self.bandwidth_gb_s * count, self.source_url)


@dataclass(frozen=True)
class CpuSpec:
    name: str
    memory_channels: int
    max_mt_s: int | None
    source_url: str
    pattern: re.Pattern[str]


@cache
def gpu_rows() -> tuple[tuple[str, GpuSpec], ...]:
    """Return (name as matched, row) for every name and alias of gpus.csv."""
    rows = []
    with (HERE / "gpus.csv").open(newline="") as handle:
        for row in csv.DictReader(handle):
            spec = GpuSpec(
                name=row["name"],
                vendor=row["vendor"],
                family=f"{row['vendor']} {row['family']}" if row["vendor"] != "Apple" else row["family"],
                memory_gb=_float(row["memory_gb"]),
                memory_type=row["memory_type"],
                bandwidth_gb_s=_float(row["bandwidth_gb_s"]),
                fp16_tensor_tflops=_float(row["fp16_tensor_tflops"]),
                source_url=row["source_url"],
                note=row["note"],
            )
            for name in [row["name"], *filter(None, row["aliases"].split(";"))]:
                rows.append((normalize(name), spec))
    return tuple(rows)


@cache
def cpu_rows() -> tuple[CpuSpec, ...]:
    with (HERE / "cpus.csv").open(newline="") as handle:
        return tuple(
            CpuSpec(
                name=row["name"],
                memory_channels=int(row["memory_channels"]),
                max_mt_s=int(row["max_mt_s"]) if row["max_mt_s"] else None,
                source_url=row["source_url"],
                pattern=re.compile(row["pattern"], re.I),
            )
            for row in csv.DictReader(handle)
        )


def gpu_spec(name: str, vram_gb: float | None = None) -> GpuSpec | None:
    """Return the catalog row of a GPU model, the one of its memory size when the model
    comes in several; None for a card the catalog does not have, or whose size
    decides its bandwidth and is not given."""
    key = normalize(name)
    found = [row for name, row in gpu_rows() if name == key]
    if len(found) > 1 and vram_gb:
        # nvidia-smi's MiB and a vendor's GB differ by a few percent (24 GB shows as 24.0 or 22.5).
        sized = [row for row in found if row.memory_gb and abs(row.memory_gb - vram_gb) <= 0.1 * row.memory_gb]
        found = sized or found
    if len({row.bandwidth_gb_s for row in found}) > 1:
        return None
    return found[0] if found else None


def sizes_differ(name: str) -> bool:
    """Return True for a GPU model the catalog lists in several memory sizes of different bandwidths."""
    key = normalize(name)
    return len({row.bandwidth_gb_s for found, row in gpu_rows() if found == key}) > 1


def cpu_spec(text: str) -> CpuSpec | None:
    """Return the catalog row of the CPU a free-text description names, else None."""
    return next((row for row in cpu_rows() if row.pattern.search(text or "")), None)


def system_memory(*, cpu: str, texts: tuple[str, ...] = (), detected: dict[str, Any] | None = None) -> Memory | None:
    """Return the system memory's bandwidth: channels (the CPU's specification) × the
    modules' speed (as the OS stated it in the fingerprint, else a "DDR5-5200" in the
    rig's description) × 8 bytes; None when either is not stated. A read bandwidth
    measured on the rig (``detected["read_gb_s"]``, e.g. benchmarks/memread.py's best
    pass) is used as it is: what the memory delivers, not what its specification allows."""
    if detected and detected.get("read_gb_s"):
        how = str(detected.get("read_method") or "a memory-read benchmark")
        return Memory("measured read bandwidth", float(detected["read_gb_s"]), f"measured on the rig with {how}")
    spec = cpu_spec(cpu)
    if spec is None:
        return None
    speed, kind, where = None, "", ""
    if detected and detected.get("speed_mt_s"):
        speed, kind, where = int(detected["speed_mt_s"]), str(detected.get("type") or ""), "as the OS states it"
    else:
        for text in (cpu, *texts):
            match = _DDR.search(text or "")
            if match:
                speed, kind, where = (
                    int(match.group("mt")),
                    match.group("type").upper(),
                    "as the rig's description states",
                )
                break
    if speed is None:
        return None
    gb_s = system_bandwidth_gb_s(channels=spec.memory_channels, mt_s=speed)
    label = f"{kind}-{speed} × {spec.memory_channels} channels".lstrip("-")
    return Memory(label, gb_s, f"{spec.source_url} (channels); speed {where}")

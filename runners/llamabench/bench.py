"""The runner runs llama-bench itself: one invocation per test and depth, each in its
own NVML power window, with Rigboard's fingerprint of the rig added to every run.

Config (TOML), besides [service]::

    [llama_bench]
    binary = "/path/to/llama-bench"
    model = "/models/gemma-3-270m-q4_k_m.gguf"
    tests = ["pp512", "tg128"]      # ppN / tgN
    depths = [0, 4096]
    repetitions = 5
    args = ["-ngl", "99", "-fa", "1"]   # passed through verbatim
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from runners.config import ConfigError
from runners.harness.fingerprint import capture
from runners.harness.power_source import PowerSource, open_power_source
from runners.llamabench.parse import BenchRow, parse, row_payload

_TEST = re.compile(r"^(pp|tg)([1-9][0-9]*)$")


@dataclass(frozen=True)
class BenchConfig:
    binary: str
    model: str
    tests: tuple[str, ...] = ("pp512", "tg128")
    depths: tuple[int, ...] = (0,)
    repetitions: int = 5
    args: tuple[str, ...] = ()
    timeout_s: float = 3600.0
    cache_dir: str = "~/.cache/rigboard"

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> BenchConfig:
        """Return the [llama_bench] table as a config; raise ConfigError naming the field."""
        for name in ("binary", "model"):
            if not isinstance(data.get(name), str) or not data[name]:
                raise ConfigError(f"llama_bench.{name}", "required (a path)")
        tests = tuple(data.get("tests") or cls.tests)
        for position, test in enumerate(tests):
            if not isinstance(test, str) or not _TEST.match(test):
                raise ConfigError(f"llama_bench.tests.{position}", f"{test!r} is not ppN or tgN")
        depths = tuple(data.get("depths") or cls.depths)
        for position, depth in enumerate(depths):
            if not isinstance(depth, int) or isinstance(depth, bool) or depth < 0:
                raise ConfigError(f"llama_bench.depths.{position}", f"{depth!r} is not a whole number ≥ 0")
        repetitions = data.get("repetitions", cls.repetitions)
        if not isinstance(repetitions, int) or isinstance(repetitions, bool) or repetitions < 1:
            raise ConfigError("llama_bench.repetitions", "a whole number ≥ 1")
        args = data.get("args") or ()
        if not isinstance(args, list | tuple) or not all(isinstance(a, str) for a in args):
            raise ConfigError("llama_bench.args", "a list of strings")
        return cls(
            binary=data["binary"],
            model=data["model"],
            tests=tests,
            depths=depths,
            repetitions=repetitions,
            args=tuple(args),
            timeout_s=float(data.get("timeout_s", cls.timeout_s)),
            cache_dir=str(data.get("cache_dir", cls.cache_dir)),
        )

    def argv(self, test: str, depth: int) -> list[str]:
        """Return llama-bench's command line for one test at one depth (-o jsonl)."""
        kind, count = _TEST.match(test).groups()  # type: ignore[union-attr]  # checked in from_mapping
        sizes = ["-p", count, "-n", "0"] if kind == "pp" else ["-p", "0", "-n", count]
        return [
            self.binary, "-m", self.model, *sizes, "-d", str(depth),
            "-r", str(self.repetitions), *self.args, "-o", "jsonl",
        ]  # fmt: skip


@dataclass
class BenchResult:
    payloads: list[dict[str, Any]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def run_bench(config: BenchConfig, *, rig: str, monitor: PowerSource | None = None) -> BenchResult:
    """Run every test × depth and return one run payload per llama-bench row.

    A failing invocation is recorded in ``errors`` (its stderr's tail) and the
    others still run. Each payload's ``extra.power`` is the NVML window of its
    invocation (model load and warm-up included: llama-bench reports no split),
    and its fingerprint is Rigboard's with llama-bench's own facts added."""
    monitor = monitor or open_power_source()
    result = BenchResult()
    fingerprint: dict[str, Any] | None = None
    for test in config.tests:
        for depth in config.depths:
            argv = config.argv(test, depth)
            with monitor.window() as window:
                proc = subprocess.run(argv, capture_output=True, text=True, timeout=config.timeout_s, check=False)  # noqa: S603
            if proc.returncode != 0:
                result.errors.append(f"{test} @ d{depth}: exit {proc.returncode}: {proc.stderr[-2000:]}")
                continue
            rows: list[BenchRow] = parse(proc.stdout, fmt="jsonl")
            if fingerprint is None:
                build = f"b{rows[0].raw['build_number']}-{rows[0].raw['build_commit']}"
                fingerprint = capture(
                    monitor=monitor,
                    engine="llama.cpp",
                    build=build,
                    model_path=config.model,
                    cache_dir=config.cache_dir,
                )
            for row in rows:
                payload = row_payload(row, rig=rig)
                payload["fingerprint"] = {**payload["fingerprint"], **fingerprint, "source": "llama-bench"}
                payload["configuration"]["command_line"] = " ".join(argv)
                payload["extra"]["power"] = window.reading.as_dict()
                result.payloads.append(payload)
    return result


def bench_config(spec: Mapping[str, Any]) -> BenchConfig:
    table = spec.get("llama_bench")
    if not isinstance(table, Mapping):
        raise ConfigError("llama_bench", "the config needs a [llama_bench] table")
    return BenchConfig.from_mapping(table)


__all__: Sequence[str] = ["BenchConfig", "BenchResult", "bench_config", "run_bench"]

"""One interleaved A/B block on the rig: both servers resident, repetitions alternated.

``run_block`` starts a fresh baseline (A) and candidate (B) llama-server with the
same flags, model file and cores (only the binary differs), sends each one
warm-up request, then measures their repetitions in ``rep_order`` (A B B A …),
one request at a time, so the two never decode at the same time. Around every
repetition it measures what else used the rig (runners/harness/contention.py),
kept per side, so a block whose A and B ran under different contention says so
and one under heavy contention is held back (``contention_call``). The servers
are stopped at the end of the block: the next block's are new processes, so the
process-to-process spread is sampled, not assumed away.

``design_for`` decides whether two servers fit at all (runners/ab_design.py
``choose_design``): from the GPUs' free VRAM when the model is offloaded (NVML),
else from the RAM the kernel says is available (/proc/meminfo MemAvailable).
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests

from runners.ab_design import (
    AbDesign,
    ContentionCall,
    DesignChoice,
    Side,
    choose_design,
    contention_call,
    rep_order,
)
from runners.config import ServerConfig
from runners.env import ab_heavy_cpu_share
from runners.harness.contention import ContentionMeter, ContentionReading, Gpus, combine
from runners.harness.measure import measure_stream
from runners.harness.server import LlamaServer, ServerError, ServerHandle
from runners.harness.workload import Workload

logger = logging.getLogger(__name__)

MEMINFO = Path("/proc/meminfo")


@dataclass
class BlockRecord:
    """One block as measured: each repetition's side and decode t/s (None for a
    failed one) in order, the contention over each side's repetitions, and the
    error that ended the block early ('' if none)."""

    index: int
    sides: list[Side] = field(default_factory=list)
    samples: list[float | None] = field(default_factory=list)
    contention_a: ContentionReading | None = None
    contention_b: ContentionReading | None = None
    error: str = ""

    def contention(self) -> ContentionCall:
        """Return what the block's contention means for judging it (ab_design.contention_call)."""
        a, b = self.contention_a, self.contention_b
        return contention_call(
            a_cpu_share=a.others_cpu_share if a else None,
            b_cpu_share=b.others_cpu_share if b else None,
            a_gpu_util_pct=a.gpu_others_util_pct if a else None,
            b_gpu_util_pct=b.gpu_others_util_pct if b else None,
            heavy_cpu_share=ab_heavy_cpu_share(),
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "sides": [s.value for s in self.sides],
            "decode_tokens_per_s": self.samples,
            "contention_a": self.contention_a.as_dict() if self.contention_a else None,
            "contention_b": self.contention_b.as_dict() if self.contention_b else None,
            "contention": self.contention().value,
            "error": self.error,
        }


def available_ram_bytes(meminfo: Path = MEMINFO) -> int | None:
    """Return MemAvailable from /proc/meminfo in bytes; None where there is none."""
    try:
        for line in meminfo.read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def available_vram_bytes() -> int | None:
    """Return the least free VRAM of the GPUs NVML sees (a split model needs room
    on each, conservatively the smallest); None without NVML or a GPU."""
    try:
        import pynvml  # type: ignore[import-not-found,import-untyped,unused-ignore]

        pynvml.nvmlInit()
    except Exception:  # no pynvml or no driver: unknown, and the fallback is taken
        return None
    try:
        count = pynvml.nvmlDeviceGetCount()
        free = [int(pynvml.nvmlDeviceGetMemoryInfo(pynvml.nvmlDeviceGetHandleByIndex(i)).free) for i in range(count)]
        return min(free) if free else None
    finally:
        pynvml.nvmlShutdown()


def design_for(server: ServerConfig, *, meminfo: Path = MEMINFO) -> DesignChoice:
    """Return the design this rig can run ``server``'s model with: interleaved
    where two copies fit in the memory the model lives in (VRAM when any layer
    is offloaded, else RAM: ``meminfo``), else run-level ABBA."""
    try:
        model_bytes = Path(server.model).expanduser().stat().st_size
    except OSError:
        model_bytes = 0
    on_gpu = server.n_gpu_layers is not None and server.n_gpu_layers != 0
    available = available_vram_bytes() if on_gpu else available_ram_bytes(meminfo)
    return choose_design(model_bytes=model_bytes, available_bytes=available)


def run_block(
    *,
    a: ServerConfig,
    b: ServerConfig,
    workload: Workload,
    index: int,
    reps_per_side: int,
    log_dir: Path | None = None,
    gpus: Gpus | None = None,
) -> BlockRecord:
    """Run block ``index`` and return its record; a server that fails to start
    or dies ends the block with ``error`` set (the samples so far are kept).
    ``a`` and ``b`` must differ only in the binary (ValueError otherwise)."""
    if dataclasses.replace(a, binary=b.binary) != b:
        raise ValueError("A and B must run with the same flags, model and port choice: only the binary may differ")
    record = BlockRecord(index=index)
    servers: dict[Side, LlamaServer] = {}
    order = rep_order(index, reps_per_side)
    meter = ContentionMeter(lambda: [s.process.pid for s in servers.values() if s.process is not None], gpus=gpus)
    readings: dict[Side, list[ContentionReading]] = {Side.A: [], Side.B: []}
    try:
        with contextlib.ExitStack() as stack:
            # Start in the block's first side's order, so neither build always starts second.
            for side in dict.fromkeys(order):
                config = a if side == Side.A else b
                where = (log_dir / f"block{index}-{side.value}") if log_dir else None
                servers[side] = LlamaServer(config, log_dir=where).start()
                stack.callback(servers[side].stop)
            session = stack.enter_context(requests.Session())
            for server in servers.values():
                for w in range(workload.warmup):
                    _request(session, server, workload, -1 - w)
            for position, side in enumerate(order):
                with meter.window() as window:
                    sample = _request(session, servers[side], workload, position)
                readings[side].append(window.reading)
                record.sides.append(side)
                record.samples.append(sample)
                alive, why = servers[side].alive()
                if not alive:
                    record.error = f"{side.value.upper()} server: {why}"
                    break
    except ServerError as exc:
        record.error = f"{exc.kind}: {exc}"
    if readings[Side.A]:
        record.contention_a = combine(readings[Side.A])
    if readings[Side.B]:
        record.contention_b = combine(readings[Side.B])
    return record


def _request(session: requests.Session, server: ServerHandle, workload: Workload, index: int) -> float | None:
    """Return one repetition's decode rate as builds are compared, the client's
    (``stats.build_decode_tokens_per_s``; None if it failed). A/B judges decode
    only, so the prompt, the same every repetition, stays in the server's slot
    (``cache_prompt``): a repetition costs its decode, not the same prefill again
    (on the 2-core VM Gemma's 321-token prefill took 1.6 s of a 3.6 s repetition).
    The decode itself is unchanged: the same tokens at the same positions."""
    sample = measure_stream(
        session,
        f"{server.base_url}/v1/chat/completions",
        server.adapt({**workload.chat_body(model=server.model_id), "cache_prompt": True}),
        index=index,
        timeout_s=workload.request_timeout_s,
        disagreement_pct=workload.disagreement_pct,
        headers=server.headers,
        server_timings=server.server_timings,
    )
    return sample.build_decode_tokens_per_s if sample.ok else None


def run_pair(
    *, a: ServerConfig, b: ServerConfig, workload: Workload, index: int, reps: int,
    log_dir: Path | None = None, gpus: Gpus | None = None,
) -> BlockRecord:  # fmt: skip
    """Run one run-level ABBA pair (the fallback): a fresh server of one build,
    its ``reps`` repetitions, stopped, then the other's (A first in even pairs,
    regressions/ab.py's ``ab_order``); return it as a record whose sides are
    not alternated (its figure is the ratio of the two run medians)."""
    record = BlockRecord(index=index)
    meter_servers: list[LlamaServer] = []
    meter = ContentionMeter(lambda: [s.process.pid for s in meter_servers if s.process is not None], gpus=gpus)
    readings: dict[Side, list[ContentionReading]] = {Side.A: [], Side.B: []}
    for side in (Side.A, Side.B) if index % 2 == 0 else (Side.B, Side.A):
        where = (log_dir / f"pair{index}-{side.value}") if log_dir else None
        try:
            server = LlamaServer(a if side == Side.A else b, log_dir=where)
            with server.start(), requests.Session() as session:
                meter_servers[:] = [server]
                for w in range(workload.warmup):
                    _request(session, server, workload, -1 - w)
                for position in range(reps):
                    with meter.window() as window:
                        sample = _request(session, server, workload, position)
                    readings[side].append(window.reading)
                    record.sides.append(side)
                    record.samples.append(sample)
        except ServerError as exc:
            record.error = f"{side.value.upper()} server: {exc.kind}: {exc}"
            break
    record.contention_a = combine(readings[Side.A]) if readings[Side.A] else None
    record.contention_b = combine(readings[Side.B]) if readings[Side.B] else None
    return record


@dataclass
class ConfirmationRecord:
    """What the rig measured for one A/B confirmation batch: the design it chose
    (and why), and each block (or, in the fallback, each pair of runs)."""

    choice: DesignChoice
    blocks: list[BlockRecord]

    @property
    def held_back(self) -> bool:
        """True when a block ran under heavy contention: the batch is not judged."""
        return any(b.contention() == ContentionCall.HEAVY for b in self.blocks)

    def as_dict(self) -> dict[str, Any]:
        return {
            "design": self.choice.design.value,
            "design_reason": self.choice.reason,
            "held_back": self.held_back,
            "blocks": [b.as_dict() for b in self.blocks],
        }


def run_confirmation(
    *, a: ServerConfig, b: ServerConfig, workload: Workload, first_index: int, count: int, reps_per_side: int,
    log_dir: Path | None = None, meminfo: Path = MEMINFO, gpus: Gpus | None = None,
) -> ConfirmationRecord:  # fmt: skip
    """Run ``count`` blocks (numbered from ``first_index``) in the design this rig's
    memory allows (``design_for``): interleaved blocks, or run-level pairs with
    ``reps_per_side`` repetitions a run."""
    choice = design_for(a, meminfo=meminfo)
    run = run_block if choice.design == AbDesign.INTERLEAVED else None
    blocks = []
    for index in range(first_index, first_index + count):
        if run is not None:
            blocks.append(run(a=a, b=b, workload=workload, index=index, reps_per_side=reps_per_side,
                              log_dir=log_dir, gpus=gpus))  # fmt: skip
        else:
            blocks.append(run_pair(a=a, b=b, workload=workload, index=index, reps=reps_per_side, log_dir=log_dir,
                                   gpus=gpus))  # fmt: skip
        logger.info("A/B %s %d: %s", choice.design.value, index, blocks[-1].contention().value)
    return ConfirmationRecord(choice, blocks)

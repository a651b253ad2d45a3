"""The ceiling on decode speed memory bandwidth sets: a token cannot be decoded
faster than its bytes can be read. Each part is read at its own memory's speed
and the times add (seed 000: experts in DDR5, the rest on a 3090), so

    seconds per token ≥ GPU bytes / GPU bandwidth + system bytes / system bandwidth

and the bound is its inverse. Speculative decoding verifies several tokens per
read, so it can pass this single-token bound (``Gauge``)."""

from __future__ import annotations

from dataclasses import dataclass

from runners.bandwidth.weights import TokenRead

GB = 1e9


def system_bandwidth_gb_s(*, channels: int, mt_s: float) -> float:
    """Return DRAM bandwidth in GB/s: channels × transfers per second × 8 bytes (a
    64-bit channel; DDR5's two 32-bit subchannels make one such channel)."""
    return channels * mt_s * 8 / 1000


@dataclass(frozen=True)
class Memory:
    """One memory a run reads from: what it is and how fast, with where that figure comes from."""

    label: str
    gb_per_s: float
    source: str = ""


@dataclass(frozen=True)
class Bound:
    """A run's decode ceiling: ``tokens_per_s`` from ``read`` at ``gpu``'s and ``cpu``'s speeds."""

    tokens_per_s: float
    read: TokenRead
    gpu: Memory | None
    cpu: Memory | None
    notes: tuple[str, ...] = ()

    @property
    def bytes_per_token(self) -> float:
        return self.read.total_bytes

    @property
    def bandwidth_gb_s(self) -> float:
        """Return the bandwidth the whole read sees on average (bytes ÷ time per token)."""
        return self.bytes_per_token * self.tokens_per_s / GB


def decode_bound(read: TokenRead, *, gpu: Memory | None, cpu: Memory | None) -> Bound | str:
    """Return the bound, or why there is none (a sentence): a part read from a memory
    whose bandwidth is not stated has no ceiling."""
    seconds = 0.0
    if read.gpu_bytes:
        if gpu is None:
            return "the GPU's memory bandwidth is not stated"
        seconds += read.gpu_bytes / (gpu.gb_per_s * GB)
    if read.cpu_bytes:
        if cpu is None:
            return "the system memory's bandwidth is not stated (its channels and speed)"
        seconds += read.cpu_bytes / (cpu.gb_per_s * GB)
    if seconds <= 0:
        return "nothing is read per token"
    return Bound(1 / seconds, read, gpu if read.gpu_bytes else None, cpu if read.cpu_bytes else None, read.notes)


@dataclass(frozen=True)
class Gauge:
    """A decode figure held against its bound.

    ``share``: measured ÷ bound (0.72 for 72%). A speculative run past the bound
    gets no share (``over_by_speculation``); its ``bytes_per_accepted_token`` is
    what the memory could have read per token delivered: bandwidth ÷ measured t/s.
    A plain run past the bound is ``impossible``: a data error to look at."""

    bound: Bound
    decode_tokens_per_s: float
    speculative: bool

    @property
    def ratio(self) -> float:
        return self.decode_tokens_per_s / self.bound.tokens_per_s

    @property
    def over_by_speculation(self) -> bool:
        return self.speculative and self.ratio > 1

    @property
    def impossible(self) -> bool:
        return not self.speculative and self.ratio > 1

    @property
    def share(self) -> float | None:
        return None if self.over_by_speculation else self.ratio

    @property
    def bytes_per_accepted_token(self) -> float:
        return self.bound.bandwidth_gb_s * GB / self.decode_tokens_per_s

"""Where a run keeps each tensor: on the GPU or in system memory.

llama.cpp's rules, as its model loader applies them: the input embedding stays in
system memory; repeating block ``i`` of ``n`` is on the GPU when ``i >= n - ngl``;
the output layer (the LM head) when ``ngl > n``; a tensor matching an
``--override-tensor`` pattern goes to that pattern's buffer (the first match wins);
``--n-cpu-moe N`` keeps the routed experts of the first N blocks in system memory
and ``--cpu-moe`` all of them. A run whose ``n_gpu_layers`` is not stated is taken
to keep everything on the GPU: the fastest placement, so the bound stays a ceiling."""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

_NGL = ("-ngl", "--n-gpu-layers", "--gpu-layers")
_OT = ("-ot", "--override-tensor")
_NCMOE = ("-ncmoe", "--n-cpu-moe")
_CMOE = ("-cmoe", "--cpu-moe")
_ROUTED_EXPERTS = r"\.ffn_(up|down|gate|gate_up)_(ch|)exps"


class Place:
    GPU = "gpu"
    CPU = "cpu"


@dataclass(frozen=True)
class Offload:
    """A run's placement flags. ``n_gpu_layers``: None when not stated (all on the GPU);
    ``overrides``: (pattern, buffer) in the order given; ``cpu_only``: no GPU at all."""

    n_gpu_layers: int | None = None
    overrides: tuple[tuple[str, str], ...] = ()
    cpu_moe_blocks: int | None = 0  # --n-cpu-moe N; None for --cpu-moe (every block)
    cpu_only: bool = False

    @property
    def stated(self) -> bool:
        """Return True when the run says anything about where its layers go."""
        return self.cpu_only or self.n_gpu_layers is not None or bool(self.overrides) or self.cpu_moe_blocks != 0

    def place(self, tensor_name: str, *, blocks: int) -> str:
        """Return Place.GPU or Place.CPU for a tensor named as in the GGUF file."""
        if self.cpu_only:
            return Place.CPU
        for pattern, buffer in self.overrides:
            if _search(pattern, tensor_name):
                return Place.CPU if buffer.upper().startswith("CPU") else Place.GPU
        match = re.match(r"^blk\.(\d+)\.", tensor_name)
        if match is not None:
            block = int(match.group(1))
            if re.search(_ROUTED_EXPERTS, tensor_name) and (self.cpu_moe_blocks is None or block < self.cpu_moe_blocks):
                return Place.CPU
            if self.n_gpu_layers is None or self.n_gpu_layers < 0:
                return Place.GPU
            return Place.GPU if block >= blocks - min(self.n_gpu_layers, blocks) else Place.CPU
        if tensor_name.startswith("token_embd."):
            return Place.CPU
        # The output layer: on the GPU only when every block is.
        if self.n_gpu_layers is None or self.n_gpu_layers < 0:
            return Place.GPU
        return Place.GPU if self.n_gpu_layers > blocks else Place.CPU

    def lm_head_place(self, *, blocks: int) -> str:
        """Return where the output projection is read (a tied one reads token_embd there)."""
        return self.place("output.weight", blocks=blocks)


def _search(pattern: str, name: str) -> bool:
    try:
        return re.search(pattern, name) is not None
    except re.error:
        return False


def _overrides(values: Iterable[str]) -> list[tuple[str, str]]:
    found = []
    for value in values:
        # One flag may carry several, comma-separated: "a=CPU,b=CUDA0".
        for item in value.replace("\n", ",").split(","):
            pattern, sep, buffer = item.strip().rpartition("=")
            if sep and pattern:
                found.append((pattern, buffer.strip()))
    return found


def offload_from(
    *,
    n_gpu_layers: int | None,
    tensor_overrides: str = "",
    command_line: str = "",
    extra_args: Iterable[str] = (),
    has_gpu: bool = True,
) -> Offload:
    """Return the placement a run's configuration states: its fields first, then the
    flags of its command line and extra arguments (which say the same in another form).
    ``has_gpu`` False (a rig without a GPU) is CPU-only whatever the flags say."""
    if not has_gpu:
        return Offload(cpu_only=True)
    argv = [*_words(command_line or ""), *[str(a) for a in extra_args]]
    ngl = n_gpu_layers
    ot_values = [tensor_overrides] if tensor_overrides else []
    cpu_moe: int | None = 0
    for index, word in enumerate(argv):
        flag, _, inline = word.partition("=") if word.startswith("--") else (word, "", "")
        value = inline or (argv[index + 1] if index + 1 < len(argv) else "")
        if flag in _NGL and ngl is None:
            ngl = _as_int(value)
        elif flag in _OT and not tensor_overrides:
            ot_values.append(value)
        elif flag in _NCMOE:
            cpu_moe = _as_int(value) or 0
        elif flag in _CMOE:
            cpu_moe = None
    if ngl == 0 and not ot_values:
        return Offload(cpu_only=True)
    return Offload(n_gpu_layers=ngl, overrides=tuple(_overrides(ot_values)), cpu_moe_blocks=cpu_moe)


@lru_cache(maxsize=4096)
def _words(command_line: str) -> tuple[str, ...]:
    """Return a command line's words as a shell reads them (split on blanks where its quotes
    do not close). Cached: a board's runs share a few hundred command lines, and storing
    the shares of millions of runs spent a third of its time here (issue 40)."""
    try:
        return tuple(shlex.split(command_line))
    except ValueError:
        return tuple(command_line.split())


def _as_int(value: str) -> int | None:
    try:
        return int(value)
    except ValueError:
        # llama.cpp also takes "auto" and "all"; both put every layer on the GPU.
        return -1 if value in ("auto", "all") else None

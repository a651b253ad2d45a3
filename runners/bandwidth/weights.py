"""The bytes one decoded token reads: the weights it passes through and its share
of the KV cache, split between the GPU and system memory.

From a GGUF header (``runners.harness.gguf``, tensor sizes by name): every tensor
once, but the routed experts (``*_exps``) × experts used / expert count, and the
token embedding not at all (a token reads one row of it) unless the file ties the
output projection to it (no ``output.weight``): then the LM head reads all of it.
Without a header (a reported row): active parameters × bits per weight, the bits
being the file's own mean (file size × 8 / parameters) when both are known, else the
quantization's nominal bits (``NOMINAL_BITS``), and no split by tensor.

The KV cache: at context depth ``d`` a token reads, in each attention block, K and
V of ``d`` positions (``min(d, sliding window)`` when the file names a window: a
lower bound, so the ceiling stays a ceiling) at the cache type's bytes per value."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from runners.bandwidth.offload import Offload, Place

# Bits per weight of ggml's types (block bytes × 8 / block elements: ggml.c's type_traits).
NOMINAL_BITS: dict[str, float] = {
    "F32": 32.0, "F16": 16.0, "BF16": 16.0, "Q8_0": 8.5, "Q6_K": 6.5625, "Q5_1": 6.0, "Q5_0": 5.5,
    "Q5_K": 5.5, "Q4_1": 5.0, "Q4_0": 4.5, "Q4_K": 4.5, "IQ4_NL": 4.5, "IQ4_XS": 4.25, "MXFP4": 4.25,
    "Q3_K": 3.4375, "IQ3_S": 3.4375, "IQ3_XXS": 3.0625, "Q2_K": 2.625,
    "IQ2_S": 2.5, "IQ2_XS": 2.3125, "IQ2_XXS": 2.0625, "IQ1_M": 1.75, "IQ1_S": 1.5625,
    "TQ1_0": 1.6875, "TQ2_0": 2.0625,
    # Not ggml types: NVFP4 is 4-bit values with an FP8 scale per 16 (4.5 bits); AWQ's
    # INT4 with an FP16 scale and zero per group of 128 (4.25).
    "NVFP4": 4.5, "AWQ-INT4": 4.25, "INT8": 8.0, "FP8": 8.0,
}  # fmt: skip
# KV cache types (--cache-type-k/-v) → bytes per value.
KV_BYTES: dict[str, float] = {
    "f32": 4.0, "f16": 2.0, "bf16": 2.0, "q8_0": 34 / 32, "q5_1": 24 / 32, "q5_0": 22 / 32,
    "q4_1": 20 / 32, "q4_0": 18 / 32, "iq4_nl": 18 / 32,
}  # fmt: skip
_QUANT_WORD = re.compile(
    r"(?:UD-)?(?P<base>I?Q\d(?:_[01K])?|IQ\d_[A-Z]+|BF16|F16|F32|MXFP4|NVFP4|AWQ-INT4|INT8|FP8|TQ\d_0)", re.I
)


def nominal_bits(quantization: str) -> float | None:
    """Return the bits per weight a quantization name stands for ('Q4_K_M' → Q4_K's 4.5,
    'UD-Q3_K_XL' → 3.4375, 'IQ3_S' → 3.4375); None for a name it does not know. A file's
    mix (its _M and _XL tensors kept wider) reads more: this is the floor of a name."""
    name = quantization.strip().upper()
    if name in NOMINAL_BITS:
        return NOMINAL_BITS[name]
    match = _QUANT_WORD.search(name)
    if match is None:
        return None
    base = match.group("base").upper()
    if base in NOMINAL_BITS:
        return NOMINAL_BITS[base]
    # Q4_K_M → Q4_K; IQ3_XXS → IQ3_XXS.
    return NOMINAL_BITS.get(base.rsplit("_", 1)[0] + "_K") if base.startswith("Q") else None


@dataclass(frozen=True)
class TokenRead:
    """What one decoded token reads: weights and KV cache bytes on the GPU and in
    system memory, how the weights were counted (``basis``) and what was left out."""

    gpu_weight_bytes: float
    cpu_weight_bytes: float
    gpu_kv_bytes: float
    cpu_kv_bytes: float
    basis: str
    notes: tuple[str, ...] = ()

    @property
    def gpu_bytes(self) -> float:
        return self.gpu_weight_bytes + self.gpu_kv_bytes

    @property
    def cpu_bytes(self) -> float:
        return self.cpu_weight_bytes + self.cpu_kv_bytes

    @property
    def total_bytes(self) -> float:
        return self.gpu_bytes + self.cpu_bytes

    @property
    def weight_bytes(self) -> float:
        return self.gpu_weight_bytes + self.cpu_weight_bytes


def _routed(rest: str) -> bool:
    return "_exps." in f".{rest}" or rest.endswith("_exps")


def header_weights(header: Mapping[str, Any], offload: Offload) -> tuple[float, float] | None:
    """Return (GPU, CPU) weight bytes one token reads per the header's tensor table;
    None for a header stored before tensor sizes were read."""
    blocks_bytes: Mapping[str, list[int]] = header.get("block_tensor_bytes") or {}
    other: Mapping[str, int] = header.get("other_tensor_bytes") or {}
    if not header.get("tensor_bytes") or not (blocks_bytes or other):
        return None
    experts, used = header.get("expert_count"), header.get("expert_used_count")
    expert_share = used / experts if experts and used else 1.0
    blocks = max((len(per) for per in blocks_bytes.values()), default=0)
    read = {Place.GPU: 0.0, Place.CPU: 0.0}
    for rest, per_block in blocks_bytes.items():
        share = expert_share if _routed(rest) else 1.0
        for block, nbytes in enumerate(per_block):
            if nbytes:
                read[offload.place(f"blk.{block}.{rest}", blocks=blocks)] += nbytes * share
    tied = "output.weight" not in other
    for name, nbytes in other.items():
        if name.startswith("token_embd."):
            if tied and name == "token_embd.weight":
                read[offload.lm_head_place(blocks=blocks)] += nbytes
            continue  # a token reads one row of the input embedding
        read[offload.place(name, blocks=blocks)] += nbytes
    return read[Place.GPU], read[Place.CPU]


def kv_bytes_per_token(header: Mapping[str, Any], *, depth_tokens: float, cache_k: str, cache_v: str) -> float | None:
    """Return the KV cache bytes one token reads at ``depth_tokens`` of context; None
    when the header lacks the attention shape or the model mixes in state-space layers
    (which blocks attend is then not in the header)."""
    layers, n_kv = header.get("block_count"), header.get("head_count_kv")
    n_head, width = header.get("head_count"), header.get("embedding_length")
    key = header.get("key_length") or (width // n_head if width and n_head else None)
    value = header.get("value_length") or key
    if not layers or not n_kv or not key or not value or header.get("has_ssm"):
        return None
    depth = min(depth_tokens, header["sliding_window"]) if header.get("sliding_window") else depth_tokens
    per_position = n_kv * (key * KV_BYTES.get(cache_k or "f16", 2.0) + value * KV_BYTES.get(cache_v or "f16", 2.0))
    return float(layers * per_position * max(depth, 0.0))


@dataclass(frozen=True)
class ModelFacts:
    """What the service knows of a model file without its header (a reported row)."""

    total_params_b: float | None
    active_params_b: float | None
    quantization: str
    weight_format: str = ""
    file_size_bytes: int | None = None
    layers: int | None = None


def token_read(
    *,
    header: Mapping[str, Any] | None,
    model: ModelFacts,
    offload: Offload,
    depth_tokens: float | None,
    cache_k: str = "",
    cache_v: str = "",
) -> TokenRead | str:
    """Return what one decoded token reads, or why it cannot be said (a sentence)."""
    notes: list[str] = []
    weights = header_weights(header, offload) if header else None
    if weights is not None:
        gpu_w, cpu_w = weights
        basis = "the GGUF file's tensor table"
    else:
        params_b = model.active_params_b or model.total_params_b
        if not params_b:
            return "the model's parameter count is not stated"
        if model.file_size_bytes and model.total_params_b:
            bits = model.file_size_bytes * 8 / (model.total_params_b * 1e9)
            basis = f"parameters × the file's {bits:.2f} bits per weight"
        else:
            found = nominal_bits(model.quantization) or nominal_bits(model.weight_format)
            if found is None and not (model.quantization or model.weight_format):
                return "its quantization is not stated, so neither are its bits per weight"
            if found is None:
                return f"the bits per weight of {model.quantization or model.weight_format!r} are not known"
            bits = found
            basis = f"parameters × {bits:g} bits ({model.quantization or model.weight_format})"
        total = params_b * 1e9 * bits / 8
        if offload.cpu_only:
            gpu_w, cpu_w = 0.0, total
        elif offload.overrides or offload.cpu_moe_blocks != 0:
            return "which weights its tensor overrides keep in system memory needs the GGUF header"
        elif offload.n_gpu_layers is not None and offload.n_gpu_layers >= 0:
            if not model.layers:
                return "its layer count is not stated, so its -ngl split is not known"
            on_gpu = min(offload.n_gpu_layers, model.layers) / model.layers
            gpu_w, cpu_w = total * on_gpu, total * (1 - on_gpu)
        else:
            gpu_w, cpu_w = total, 0.0
    kv = None
    if depth_tokens is None:
        notes.append("KV cache not counted: the context depth is not known")
    elif header:
        kv = kv_bytes_per_token(header, depth_tokens=depth_tokens, cache_k=cache_k, cache_v=cache_v)
        if kv is None:
            notes.append("KV cache not counted: the header does not give every attention block's shape")
    else:
        notes.append("KV cache not counted: the model's attention shape is not stated")
    kv = kv or 0.0
    gpu_share = _attention_on_gpu(header, model, offload)
    return TokenRead(gpu_w, cpu_w, kv * gpu_share, kv * (1 - gpu_share), basis, tuple(notes))


def _attention_on_gpu(header: Mapping[str, Any] | None, model: ModelFacts, offload: Offload) -> float:
    """Return the share of blocks whose attention (and so KV cache) sits on the GPU:
    an expert offload (-ot, --n-cpu-moe) moves experts, not attention."""
    blocks = (header or {}).get("block_count") or model.layers
    if offload.cpu_only:
        return 0.0
    if not blocks:
        return 1.0 if offload.n_gpu_layers is None or offload.n_gpu_layers < 0 else 0.0
    on_gpu = sum(offload.place(f"blk.{i}.attn_k.weight", blocks=blocks) == Place.GPU for i in range(blocks))
    return on_gpu / blocks

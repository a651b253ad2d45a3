"""A run's memory-bandwidth bound and gauge, from its stored facts: the model file's
GGUF header (the run's fingerprint) or its parameters and quantization, the run's
offload flags, its rig's GPUs (the catalog) and system memory.

Which memory a rig's cards add up to: llama.cpp and its forks split a model by layers
by default, so a token passes the cards one after another and one card's bandwidth
bounds it (``--split-mode row`` reads them together); vLLM and SGLang split each
tensor across the cards (tensor parallel), so their bandwidths add. A rig mixing card
models does not say which card ran a run: the fastest card's bandwidth is used (a
ceiling stays a ceiling). A model larger than the GPU memory whose split is not stated
has no bound: where its layers went is not known."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from leaderboard.results.hardware.catalog import GpuSpec, gpu_spec, sizes_differ, system_memory
from runners.bandwidth.bound import Bound, Gauge, Memory, decode_bound
from runners.bandwidth.offload import offload_from
from runners.bandwidth.weights import ModelFacts, nominal_bits, token_read

TENSOR_PARALLEL_ENGINES = ("vllm", "sglang")
NOT_SPECULATIVE = ("", "none")


@dataclass(frozen=True)
class RunFacts:
    """What a run's bound is computed from (plain values: ``facts_from_values``)."""

    run_id: int
    engine: str
    speculative_type: str
    decode_tokens_per_s: float | None
    prefill_tokens_per_s: float | None
    header: Mapping[str, Any] | None
    model: ModelFacts
    n_gpu_layers: int | None
    tensor_overrides: str
    command_line: str
    extra_args: tuple[str, ...]
    cache_type_k: str
    cache_type_v: str
    gpus: tuple[tuple[str, int, float | None], ...]  # (model, count, VRAM GB) per group
    cpu: str
    rig_texts: tuple[str, ...]
    memory_detected: Mapping[str, Any] = field(default_factory=dict)
    depth_tokens: float | None = None
    rig_id: int = 0
    architecture: str = ""

    @property
    def speculative(self) -> bool:
        return self.speculative_type not in NOT_SPECULATIVE


@dataclass(frozen=True)
class RunBound:
    """A run's bound (or ``reason`` there is none), its gauge, and its prefill FLOP/s."""

    facts: RunFacts
    bound: Bound | None
    reason: str = ""
    gpu_family: str = ""
    peak_tflops: float | None = None

    @property
    def gauge(self) -> Gauge | None:
        if self.bound is None or not self.facts.decode_tokens_per_s:
            return None
        return Gauge(self.bound, self.facts.decode_tokens_per_s, self.facts.speculative)

    @property
    def share(self) -> float | None:
        gauge = self.gauge
        return gauge.share if gauge else None

    @property
    def prefill_tflops(self) -> float | None:
        """Return prefill FLOP/s in TFLOP/s: 2 FLOPs per active parameter per prompt token
        (attention's share, small at the depths measured, left out)."""
        params_b = self.facts.model.active_params_b or self.facts.model.total_params_b
        header = self.facts.header or {}
        if header.get("active_params"):
            params_b = header["active_params"] / 1e9
        if not params_b or not self.facts.prefill_tokens_per_s:
            return None
        return 2 * params_b * 1e9 * self.facts.prefill_tokens_per_s / 1e12


def _gpu_memory(facts: RunFacts) -> tuple[Memory | None, GpuSpec | None, str, list[str]]:
    """Return (the GPU memory a token is read from, its catalog row, why none, notes)."""
    specs = [(gpu_spec(model, vram), model, count) for model, count, vram in facts.gpus]
    missing = [model for spec, model, _ in specs if spec is None or spec.bandwidth_gb_s is None]
    if missing:
        if sizes_differ(missing[0]):
            why = f"the {missing[0]} comes in memory sizes of different bandwidths and the rig does not state its size"
        else:
            why = f"the memory bandwidth of the {missing[0]} is not stated in the hardware catalog"
        return None, None, why, []
    notes = []
    stated = [(spec, count) for spec, _, count in specs if spec is not None]
    spec, count = max(stated, key=lambda s: s[0].bandwidth_gb_s or 0)
    if len(specs) > 1:
        notes.append(f"which card ran it is not stated: the fastest, the {spec.name}, is used")
        count = 1
    parallel = facts.engine in TENSOR_PARALLEL_ENGINES or "row" in _split_mode(facts)
    if count > 1 and parallel:
        notes.append(f"the {count} cards read in parallel (tensor parallel)")
        return spec.memory(count), spec, "", notes
    if count > 1:
        notes.append(f"layers split across the {count} cards are read one card after another")
    return spec.memory(1), spec, "", notes


def _split_mode(facts: RunFacts) -> str:
    words = [*facts.command_line.split(), *facts.extra_args]
    for i, word in enumerate(words):
        if word in ("-sm", "--split-mode") and i + 1 < len(words):
            return words[i + 1]
        if word.startswith("--split-mode="):
            return word.split("=", 1)[1]
    return ""


def _model_bytes(facts: RunFacts) -> float | None:
    header = facts.header or {}
    if header.get("tensor_bytes"):
        return float(header["tensor_bytes"])
    if facts.model.file_size_bytes:
        return float(facts.model.file_size_bytes)
    bits = nominal_bits(facts.model.quantization) or nominal_bits(facts.model.weight_format)
    return facts.model.total_params_b * 1e9 * bits / 8 if bits and facts.model.total_params_b else None


def run_bound(facts: RunFacts) -> RunBound:
    """Return the run's bound, or the reason (a sentence) it has none."""
    has_gpu = bool(facts.gpus)
    gpu, spec, why, notes = _gpu_memory(facts) if has_gpu else (None, None, "", [])
    unified = spec is not None and spec.vendor == "Apple"
    offload = offload_from(
        n_gpu_layers=facts.n_gpu_layers,
        tensor_overrides=facts.tensor_overrides,
        command_line=facts.command_line,
        extra_args=facts.extra_args,
        has_gpu=has_gpu,
    )
    family = spec.family if spec else ("CPU" if not has_gpu else "")
    peak = spec.fp16_tensor_tflops if spec else None
    if why:
        return RunBound(facts, None, why, family, peak)
    if has_gpu and not unified and not offload.stated and spec is not None:
        size = _model_bytes(facts)
        memory_gb = (spec.memory_gb or max((v or 0 for _, _, v in facts.gpus), default=0)) * max(
            (c for _, c, _ in facts.gpus), default=1
        )
        if size and memory_gb and size > memory_gb * 1e9:
            return RunBound(
                facts,
                None,
                f"the model ({size / 1e9:.1f} GB) does not fit in {memory_gb:g} GB of GPU memory "
                "and the run does not state which layers it kept in system memory",
                family,
                peak,
            )
    read = token_read(
        header=facts.header,
        model=facts.model,
        offload=offload,
        depth_tokens=facts.depth_tokens,
        cache_k=facts.cache_type_k,
        cache_v=facts.cache_type_v,
    )
    if isinstance(read, str):
        return RunBound(facts, None, read, family, peak)
    cpu = gpu if unified else system_memory(cpu=facts.cpu, texts=facts.rig_texts, detected=dict(facts.memory_detected))
    bound = decode_bound(read, gpu=gpu, cpu=cpu)
    if isinstance(bound, str):
        return RunBound(facts, None, bound, family, peak)
    if notes:
        bound = Bound(bound.tokens_per_s, bound.read, bound.gpu, bound.cpu, (*bound.notes, *notes))
    return RunBound(facts, bound, "", family, peak)


# The Run columns a RunFacts is built from, as ``QuerySet.values()`` names them.
FACT_VALUES = (
    "pk", "rig_id", "stack__engine", "configuration__speculative_type", "decode_tokens_per_s_mean",
    "prefill_tokens_per_s_mean", "fingerprint__model__gguf", "fingerprint__memory", "fingerprint__gpus",
    "model_file__total_params_b", "model_file__active_params_b", "model_file__quantization",
    "model_file__weight_format", "model_file__file_size_bytes", "model_file__layers", "model_file__architecture",
    "configuration__n_gpu_layers", "configuration__tensor_overrides", "configuration__command_line",
    "configuration__extra_args", "configuration__cache_type_k", "configuration__cache_type_v",
    "rig__cpu", "rig__name", "rig__notes",
)  # fmt: skip


def facts_from_values(
    v: Mapping[str, Any], *, gpus: Iterable[tuple[str, int, float | None]], depth_tokens: float | None
) -> RunFacts:
    """Return the facts of one run given as ``FACT_VALUES``, its rig's GPU groups and
    the mean context depth its tokens were decoded at (None: not known)."""
    header = v["fingerprint__model__gguf"]
    memory = v["fingerprint__memory"]
    groups = tuple(gpus) or _fingerprint_gpus(v["fingerprint__gpus"])
    return RunFacts(
        run_id=v["pk"],
        rig_id=v["rig_id"],
        engine=v["stack__engine"],
        speculative_type=v["configuration__speculative_type"] or "",
        decode_tokens_per_s=v["decode_tokens_per_s_mean"],
        prefill_tokens_per_s=v["prefill_tokens_per_s_mean"],
        header=header if isinstance(header, dict) else None,
        model=ModelFacts(
            total_params_b=v["model_file__total_params_b"],
            active_params_b=v["model_file__active_params_b"],
            quantization=v["model_file__quantization"] or "",
            weight_format=v["model_file__weight_format"] or "",
            file_size_bytes=v["model_file__file_size_bytes"],
            layers=v["model_file__layers"],
        ),
        architecture=v["model_file__architecture"] or "",
        n_gpu_layers=v["configuration__n_gpu_layers"],
        tensor_overrides=v["configuration__tensor_overrides"] or "",
        command_line=v["configuration__command_line"] or "",
        extra_args=tuple(str(a) for a in (v["configuration__extra_args"] or [])),
        cache_type_k=v["configuration__cache_type_k"] or "",
        cache_type_v=v["configuration__cache_type_v"] or "",
        gpus=groups,
        cpu=v["rig__cpu"] or "",
        rig_texts=(v["rig__name"] or "", v["rig__notes"] or ""),
        memory_detected=memory if isinstance(memory, dict) else {},
        depth_tokens=depth_tokens,
    )


def _fingerprint_gpus(listed: Any) -> tuple[tuple[str, int, float | None], ...]:
    """Return the GPU groups a run's fingerprint lists (NVML's names and MiB), for a rig
    whose GPUs were never entered; () when it lists none."""
    if not isinstance(listed, list):
        return ()
    groups: dict[tuple[str, float | None], int] = {}
    for gpu in listed:
        if isinstance(gpu, dict) and gpu.get("name"):
            mib = gpu.get("vram_mib")
            key = (str(gpu["name"]), round(mib / 1024, 1) if isinstance(mib, (int, float)) else None)
            groups[key] = groups.get(key, 0) + 1
    return tuple((name, count, vram) for (name, vram), count in groups.items())

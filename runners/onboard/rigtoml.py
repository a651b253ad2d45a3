"""The commented ``rig.toml`` that ``rigboard-runner init`` writes (the shape of
runners/examples/rig.toml, read by runners/config.py)."""

from __future__ import annotations

import datetime as dt
import json
import platform
from dataclasses import dataclass

from runners.onboard.detect import ModelFile, RigFacts, ServerBuild


@dataclass
class InitChoices:
    """What the owner chose (or the flags said) beside what was detected."""

    url: str
    token: str
    rig: str
    server: ServerBuild
    model: ModelFile
    ctx_size: int = 4096
    n_gpu_layers: int | None = None  # None: 99 with a GPU, 0 without
    threads: int | None = None
    spool_dir: str = "~/.cache/rigboard/spool"
    max_tokens: int = 2000  # the workload's standard: runs compare with others' only at the same length
    repetitions: int = 10


def _s(value: str) -> str:
    """A TOML basic string (JSON's escapes are TOML's)."""
    return json.dumps(value)


def render(choices: InitChoices, facts: RigFacts) -> str:
    """Return the rig.toml text: every value with a comment saying where it came from."""
    gpu_layers = choices.n_gpu_layers if choices.n_gpu_layers is not None else (99 if facts.gpus else 0)
    lines = [
        f"# Written by `rigboard-runner init` on {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC "
        f"on {platform.node() or 'this rig'}.",
        "# Check it with `rigboard-runner doctor --config rig.toml`, run it with",
        "# `rigboard-runner run --config rig.toml`. Every field: runners/README.md.",
        "#",
        "# Detected:",
        *[
            f"#   GPU {g.index}: {g.name}, {g.vram_mib if g.vram_mib is not None else '?'} MiB VRAM, "
            f"power limit {g.power_limit_w if g.power_limit_w is not None else '?'} W, driver {g.driver or '?'}"
            for g in facts.gpus
        ],
        *([f"#   no GPU figures ({facts.power_reason}): energy and power will be empty"] if not facts.gpus else []),
        f"#   CPU: {facts.cpu} ({facts.cpu_cores or '?'} threads), RAM {facts.ram_gb or '?'} GiB, OS {facts.os}",
        "",
        "[service]",
        f"url = {_s(choices.url)}",
        f"token = {_s(choices.token)}   # the rig's token: this file is written readable by you only",
        f"rig = {_s(choices.rig)}",
        f"spool_dir = {_s(choices.spool_dir)}   # runs wait here while the service is away",
        "",
        "[server]",
        f"# llama.cpp {choices.server.version or '(version unknown)'}, found on {choices.server.origin}; "
        f"backends: {', '.join(choices.server.backends) or 'unknown'}",
        f"binary = {_s(choices.server.path)}",
        f"# {choices.model.size_gib:.2f} GiB GGUF",
        f"model = {_s(choices.model.path)}",
        f"ctx_size = {choices.ctx_size}",
        f"n_gpu_layers = {gpu_layers}   # {'all layers on the GPU' if gpu_layers else 'CPU only'}",
        *([f"threads = {choices.threads}"] if choices.threads else []),
        "parallel = 1",
        '# flash_attn = "on"',
        '# cache_type_k = "q8_0"',
        '# extra_args = ["--no-mmap"]',
        "",
        "# Model metadata the GGUF header cannot tell (name, repo); the rest is read from the file.",
        "# [model]",
        '# name = ""',
        '# repo = ""',
        "",
        "[workload]",
        'name = "space-invaders-html"',
        f"max_tokens = {choices.max_tokens}",
        f"repetitions = {choices.repetitions}",
        "warmup = 1",
        "",
        "[sweep]",
        "enabled = false   # true: decode and prefill speed at growing context depths (slow)",
        "",
    ]
    return "\n".join(lines)

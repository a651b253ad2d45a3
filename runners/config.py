"""The rig's configuration: what to launch (or attach to), what to run, where to post.

One shape serves the CLI's TOML/JSON file and the Celery task's JSON spec
(``RigConfig.from_mapping``). Every bad value raises ConfigError naming the
field path (``server.ctx_size``) and the reason, before anything is launched.
"""

from __future__ import annotations

import json
import shlex
import tomllib
import types
import typing
from dataclasses import MISSING, dataclass, field, fields, is_dataclass
from pathlib import Path
from typing import Any

# The service's SpeculativeType choices, keyed by llama-server's --spec-type name.
_SPEC_TYPES = {
    "none": "none",
    "draft-simple": "draft",
    "draft-eagle3": "eagle",
    "draft-mtp": "mtp",
    "draft-dflash": "dflash",
    "draft-dspark": "unknown",
}

# Every name llama-server's --spec-type takes (common/speculative.cpp,
# common_speculative_type_from_name_map); a comma list of them is allowed.
LLAMA_SPEC_TYPES = (*_SPEC_TYPES, "ngram-simple", "ngram-map-k", "ngram-map-k4v", "ngram-mod", "ngram-cache")

# ServerConfig field -> the llama-server flag that sets it (argv below, and the
# campaign check that the rig's llama-server accepts each flag a space varies).
SERVER_FLAGS = {
    "model": "--model",
    "ctx_size": "--ctx-size",
    "n_gpu_layers": "--n-gpu-layers",
    "tensor_split": "--tensor-split",
    "cache_type_k": "--cache-type-k",
    "cache_type_v": "--cache-type-v",
    "batch_size": "--batch-size",
    "ubatch_size": "--ubatch-size",
    "threads": "--threads",
    "parallel": "--parallel",
    "flash_attn": "--flash-attn",
    "tensor_overrides": "-ot",
    "spec_type": "--spec-type",
    "draft_model": "--spec-draft-model",
    "draft_n_max": "--spec-draft-n-max",
    "chat_template_kwargs": "--chat-template-kwargs",
}

DEFAULT_SWEEP_DEPTHS = (4096, 8192, 16384, 32768, 65536, 131072, 202752, 262144)

# ``attach.engine`` for a server known only to be OpenAI-compatible: the runner
# asks it nothing beyond /v1 and posts the engine as 'other'.
GENERIC_OPENAI = "openai"
# The service's engine names (leaderboard/results/models/catalog.py Engine).
ENGINES = ("llama.cpp", "ik_llama.cpp", "vllm", "ollama", "sglang", "beellama", "cloud-api", "other")


class ConfigError(ValueError):
    """A configuration value is missing or wrong; ``field`` is its dotted path."""

    def __init__(self, field_path: str, reason: str) -> None:
        super().__init__(f"{field_path}: {reason}")
        self.field = field_path
        self.reason = reason


@dataclass
class ServiceConfig:
    url: str = ""
    token: str = ""
    rig: str = ""
    spool_dir: str = "~/.cache/rigboard/spool"
    timeout_s: float = 30.0


@dataclass
class ServerConfig:
    """llama-server's flags. ``None`` / empty leaves the server's own default."""

    model: str = ""
    binary: str = "llama-server"
    host: str = "127.0.0.1"
    port: int = 0  # 0: pick a free ephemeral port
    ctx_size: int | None = None
    n_gpu_layers: int | None = None
    tensor_split: str = ""
    tensor_overrides: list[str] = field(default_factory=list)
    cache_type_k: str = ""
    cache_type_v: str = ""
    batch_size: int | None = None
    ubatch_size: int | None = None
    threads: int | None = None
    parallel: int | None = None
    flash_attn: str = ""
    spec_type: str = "none"
    draft_model: str = ""
    draft_n_max: int | None = None
    chat_template_kwargs: dict[str, Any] = field(default_factory=lambda: {"enable_thinking": False})
    extra_args: list[str] = field(default_factory=list)
    startup_timeout_s: float = 600.0
    stop_grace_s: float = 10.0

    def argv(self, *, port: int) -> list[str]:
        """Return the full command line for ``port`` (binary first)."""
        flag = SERVER_FLAGS
        args = [self.binary, flag["model"], self.model, "--host", self.host, "--port", str(port)]
        optional = (
            "ctx_size", "n_gpu_layers", "tensor_split", "cache_type_k", "cache_type_v",
            "batch_size", "ubatch_size", "threads", "parallel", "flash_attn",
        )  # fmt: skip
        for name in optional:
            value = getattr(self, name)
            if value not in (None, ""):
                args += [flag[name], str(value)]
        for pattern in self.tensor_overrides:
            args += [flag["tensor_overrides"], pattern]
        if self.spec_type and self.spec_type != "none":
            args += [flag["spec_type"], self.spec_type]
        if self.draft_model:
            args += [flag["draft_model"], self.draft_model]
        if self.draft_n_max is not None:
            args += [flag["draft_n_max"], str(self.draft_n_max)]
        if self.chat_template_kwargs:
            args += [flag["chat_template_kwargs"], json.dumps(self.chat_template_kwargs, sort_keys=True)]
        return args + list(self.extra_args)

    def spec_type_error(self) -> str:
        """Return why llama-server would refuse ``spec_type``, '' when it takes it.
        The service's own names for the same methods (``mtp``, ``eagle``…) are
        not llama-server's: the message names the one to write instead."""
        if not self.spec_type.strip():
            return ""  # llama-server's default: none
        service_names = {v: k for k, v in _SPEC_TYPES.items() if v not in ("none", "unknown")}
        for name in (part.strip() for part in self.spec_type.split(",")):
            if name in LLAMA_SPEC_TYPES:
                continue
            hint = f" (the service's name for llama-server's {service_names[name]})" if name in service_names else ""
            if name == "ngram":
                hint = " (the service's name for the ngram-* types)"
            return f"{name!r} is not a llama-server --spec-type{hint}; one of {', '.join(LLAMA_SPEC_TYPES)}"
        return ""

    def speculative_type(self) -> str:
        """Return the service's speculative_type for ``spec_type`` (first of a comma list)."""
        first = (self.spec_type or "none").split(",")[0].strip()
        if first.startswith("ngram"):
            return "ngram"
        return _SPEC_TYPES.get(first, "unknown")


@dataclass
class AttachConfig:
    """An already running OpenAI-compatible server."""

    url: str = ""
    engine: str = ""  # one of ENGINES, or 'openai' (generic: /v1 only); '' = detect
    api_key: str = ""
    model: str = ""  # the model name to request; '' = the server's first


@dataclass
class WorkloadConfig:
    name: str = "space-invaders-html"
    max_tokens: int = 2000
    repetitions: int = 10
    warmup: int = 1
    temperature: float = 0.6
    top_k: int | None = 20
    top_p: float | None = None
    min_p: float | None = 0.0
    seed: int | None = None
    thinking: bool = False
    request_timeout_s: float = 600.0
    # Client and server decode t/s further apart than this are flagged.
    disagreement_pct: float = 3.0
    # Concurrency sweep (runners/harness/concurrency.py): at each level N streams send the
    # prompt at once, requests_per_level requests in all; empty: no sweep.
    concurrency_levels: list[int] = field(default_factory=list)
    requests_per_level: int = 8


@dataclass
class SweepConfig:
    enabled: bool = False
    depths: list[int] = field(default_factory=lambda: list(DEFAULT_SWEEP_DEPTHS))
    decode_tokens: int = 128
    request_timeout_s: float = 1800.0


@dataclass
class ModelConfig:
    """Model metadata for the run. A field left empty is filled from the model
    file's GGUF header where it tells (architecture, parameter counts, experts,
    layers, quantization); a field given here wins over the header."""

    name: str = ""
    repo: str = ""
    architecture: str = ""
    total_params_b: float | None = None
    active_params_b: float | None = None
    experts_total: int | None = None
    experts_active: int | None = None
    layers: int | None = None
    quantization: str = ""
    weight_format: str = ""


@dataclass
class StackConfig:
    engine: str = ""
    build: str = ""
    build_flags: str = ""
    image: str = ""


@dataclass
class TrialConfig:
    """What a tuning campaign's trial asks of the rig beyond a plain run
    (runners/campaign/hooks.py honours it, from the CLI and from a job alike):
    the perplexity of the campaign's model files, sent with the run, and pruning
    against the campaign's completed trials (their objective per repetition)."""

    direction: str = "maximize"
    prune_history: list[list[float]] = field(default_factory=list)
    perplexity_models: list[str] = field(default_factory=list)


@dataclass
class RigConfig:
    service: ServiceConfig = field(default_factory=ServiceConfig)
    server: ServerConfig | None = None
    attach: AttachConfig | None = None
    workload: WorkloadConfig = field(default_factory=WorkloadConfig)
    sweep: SweepConfig = field(default_factory=SweepConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    stack: StackConfig = field(default_factory=StackConfig)
    trial: TrialConfig | None = None  # set by a tuning campaign only
    notes: str = ""
    run_uuid: str = ""
    cache_dir: str = "~/.cache/rigboard"
    output_path: str = ""  # also write the run JSON here

    @classmethod
    def from_mapping(cls, data: typing.Mapping[str, Any]) -> RigConfig:
        """Return the config for a JSON-able mapping; raise ConfigError naming the bad field."""
        config = _build(cls, data, "")
        config.validate()
        return config

    def validate(self) -> None:
        if (self.server is None) == (self.attach is None):
            raise ConfigError("server", "give exactly one of [server] (launch) or [attach] (a running server)")
        if self.server is not None:
            if not self.server.model:
                raise ConfigError("server.model", "required: the path of the model file")
            spec_type_error = self.server.spec_type_error()
            if spec_type_error:
                raise ConfigError("server.spec_type", spec_type_error)
            if self.server.spec_type.startswith("draft-simple") and not self.server.draft_model:
                raise ConfigError("server.draft_model", "required with spec_type draft-simple")
            if not 0 <= self.server.port <= 65535:
                raise ConfigError("server.port", "must be 0..65535")
        if self.attach is not None and not self.attach.url.startswith(("http://", "https://")):
            raise ConfigError("attach.url", "must be an http(s) URL")
        if self.attach is not None and self.attach.engine not in ("", GENERIC_OPENAI, *ENGINES):
            raise ConfigError(
                "attach.engine", f"must be empty (detect), {GENERIC_OPENAI} (generic) or one of {', '.join(ENGINES)}"
            )
        if self.trial is not None and self.trial.direction not in ("maximize", "minimize"):
            raise ConfigError("trial.direction", "must be maximize or minimize")
        if self.workload.repetitions < 1:
            raise ConfigError("workload.repetitions", "must be at least 1")
        if self.workload.max_tokens < 2:
            raise ConfigError("workload.max_tokens", "must be at least 2 (decode speed needs two tokens)")
        if self.workload.warmup < 0:
            raise ConfigError("workload.warmup", "must not be negative")
        self._validate_concurrency()
        if any(d < 1 for d in self.sweep.depths):
            raise ConfigError("sweep.depths", "every depth must be a positive token count")
        if self.service.url and not self.service.url.startswith(("http://", "https://")):
            raise ConfigError("service.url", "must be an http(s) URL")

    def _validate_concurrency(self) -> None:
        levels = self.workload.concurrency_levels
        if self.workload.requests_per_level < 1:
            raise ConfigError(
                "workload.requests_per_level", f"must be at least 1, got {self.workload.requests_per_level}"
            )
        if not levels:
            return
        for i, level in enumerate(levels):
            if level < 1:
                raise ConfigError(f"workload.concurrency_levels.{i}", f"must be at least 1 stream, got {level}")
        if len(set(levels)) != len(levels):
            raise ConfigError("workload.concurrency_levels", "a level is given twice")
        if self.workload.requests_per_level < max(levels):
            raise ConfigError(
                "workload.requests_per_level",
                f"must be at least the highest concurrency level ({max(levels)}), "
                f"got {self.workload.requests_per_level}",
            )
        if self.server is None:
            return  # attach mode: the server's slots are its own business
        parallel = server_parallel(self.server)
        if parallel is None or parallel < max(levels):
            have = "not set (llama-server's default may be fewer slots)" if parallel is None else str(parallel)
            raise ConfigError(
                "server.parallel",
                f"must be at least the highest concurrency level {max(levels)} "
                f"(workload.concurrency_levels); it is {have}",
            )


def server_parallel(server: ServerConfig) -> int | None:
    """Return the launched server's slot count: ``parallel``, else ``--parallel``/``-np``
    in ``extra_args`` (the last one wins, as llama-server reads them); None when neither."""
    found = server.parallel
    args = list(server.extra_args)
    for i, arg in enumerate(args):
        value = None
        if arg in ("--parallel", "-np") and i + 1 < len(args):
            value = args[i + 1]
        elif arg.startswith("--parallel="):
            value = arg.split("=", 1)[1]
        if value is not None:
            try:
                found = int(value)
            except ValueError:
                raise ConfigError("server.extra_args", f"--parallel needs a whole number, got {value!r}") from None
    return found


def read_spec(path: str | Path) -> dict[str, Any]:
    """Return the raw mapping of a TOML (or ``.json``) config file; ConfigError naming the file."""
    file_path = Path(path).expanduser()
    try:
        raw = file_path.read_bytes()
    except OSError as exc:
        raise ConfigError(str(path), f"cannot read the config file ({exc.strerror})") from exc
    kind = "JSON" if file_path.suffix == ".json" else "TOML"
    try:
        data = json.loads(raw) if kind == "JSON" else tomllib.loads(raw.decode())
    except (ValueError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(str(path), f"not valid {kind}: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError(str(path), f"expected a table/object at the top, got {type(data).__name__}")
    return data


def command_line_text(argv: list[str]) -> str:
    """Return ``argv`` as one shell-quoted line (what the run records)."""
    return shlex.join(argv)


def load_rig_config(path: str | Path) -> RigConfig:
    """Read and check a TOML/JSON config file; raise ConfigError naming the file or field
    (``rigboard-runner doctor`` and the tests of ``init`` read the file it wrote)."""
    return RigConfig.from_mapping(read_spec(path))


def _build(cls: type, data: Any, prefix: str) -> Any:
    if not isinstance(data, typing.Mapping):
        raise ConfigError(prefix or "config", f"expected a table/object, got {type(data).__name__}")
    hints = typing.get_type_hints(cls)
    known = {f.name for f in fields(cls)}
    for key in data:
        if key not in known:
            raise ConfigError(_join(prefix, str(key)), f"unknown field (known: {', '.join(sorted(known))})")
    kwargs = {}
    for f in fields(cls):
        if f.name not in data:
            if f.default is MISSING and f.default_factory is MISSING:
                raise ConfigError(_join(prefix, f.name), "required")
            continue
        kwargs[f.name] = _convert(hints[f.name], data[f.name], _join(prefix, f.name))
    return cls(**kwargs)


def _convert(hint: Any, value: Any, path: str) -> Any:
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        options = [a for a in typing.get_args(hint) if a is not type(None)]
        if value is None:
            return None
        return _convert(options[0], value, path)
    if is_dataclass(hint):
        return _build(typing.cast(type, hint), value, path)
    if origin is list:
        if not isinstance(value, list):
            raise ConfigError(path, f"expected a list, got {value!r}")
        (item,) = typing.get_args(hint)
        return [_convert(item, v, f"{path}.{i}") for i, v in enumerate(value)]
    if origin is dict:
        if not isinstance(value, typing.Mapping):
            raise ConfigError(path, f"expected a table/object, got {value!r}")
        return dict(value)
    if hint is bool:
        if not isinstance(value, bool):
            raise ConfigError(path, f"expected true or false, got {value!r}")
        return value
    if hint is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(path, f"expected an integer, got {value!r}")
        return value
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ConfigError(path, f"expected a number, got {value!r}")
        return float(value)
    if hint is str:
        if not isinstance(value, str):
            raise ConfigError(path, f"expected a string, got {value!r}")
        return value
    return value


def _join(prefix: str, name: str) -> str:
    return f"{prefix}.{name}" if prefix else name

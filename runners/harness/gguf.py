"""What a GGUF model file says about itself: a reader of the header, never the tensor data.

A GGUF file (versions 2 and 3, little-endian) is: the magic ``GGUF``, the
version, the tensor count and the key/value count, the typed key/values, then
one info record per tensor (name, dims, type, offset) and, aligned, the tensor
data. The reader maps the file and walks the header only: array bodies it does
not need (the tokenizer's 100k+ strings) are stepped over, and the tensor data
(gigabytes) is never touched, so reading a 20 GB model's header costs what
reading its vocabulary's lengths costs.
"""

from __future__ import annotations

import mmap
import re
import struct
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

MAGIC = b"GGUF"
SUPPORTED_VERSIONS = (2, 3)
GGML_MAX_DIMS = 4

# GGUF value types: (struct format, size) for the fixed-size ones.
_UINT8, _INT8, _UINT16, _INT16, _UINT32, _INT32, _FLOAT32, _BOOL, _STRING, _ARRAY, _UINT64, _INT64, _FLOAT64 = range(13)
_FIXED: dict[int, tuple[str, int]] = {
    _UINT8: ("<B", 1),
    _INT8: ("<b", 1),
    _UINT16: ("<H", 2),
    _INT16: ("<h", 2),
    _UINT32: ("<I", 4),
    _INT32: ("<i", 4),
    _FLOAT32: ("<f", 4),
    _BOOL: ("<?", 1),
    _UINT64: ("<Q", 8),
    _INT64: ("<q", 8),
    _FLOAT64: ("<d", 8),
}

# llama.cpp's ``llama_ftype`` (include/llama.h), as the quantize tool names them.
# 4 and 33-35 are no longer written, but older files still carry them.
# fmt: off
LLAMA_FTYPES: dict[int, str] = {
    0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 4: "Q4_1_SOME_F16", 7: "Q8_0", 8: "Q5_0", 9: "Q5_1",
    10: "Q2_K", 11: "Q3_K_S", 12: "Q3_K_M", 13: "Q3_K_L", 14: "Q4_K_S", 15: "Q4_K_M", 16: "Q5_K_S",
    17: "Q5_K_M", 18: "Q6_K", 19: "IQ2_XXS", 20: "IQ2_XS", 21: "Q2_K_S", 22: "IQ3_XS", 23: "IQ3_XXS",
    24: "IQ1_S", 25: "IQ4_NL", 26: "IQ3_S", 27: "IQ3_M", 28: "IQ2_S", 29: "IQ2_M", 30: "IQ4_XS",
    31: "IQ1_M", 32: "BF16", 33: "Q4_0_4_4", 34: "Q4_0_4_8", 35: "Q4_0_8_8", 36: "TQ1_0", 37: "TQ2_0",
    38: "MXFP4_MOE", 39: "NVFP4", 40: "Q1_0",
}
# fmt: on

# The keys kept (``<arch>.`` + one of _ARCH_KEYS for the architecture's own).
_GENERAL_KEYS = (
    "general.architecture",
    "general.name",
    "general.size_label",
    "general.file_type",
    "general.alignment",
    "split.count",
)
DEFAULT_ALIGNMENT = 32
_ARCH_KEYS = (
    "block_count",
    "context_length",
    "expert_count",
    "expert_used_count",
    "embedding_length",
    "attention.head_count",
    "attention.head_count_kv",
    "attention.key_length",
    "attention.value_length",
    "attention.sliding_window",
)
# ggml's tensor types as (elements per block, bytes per block): ggml/src/ggml.c's
# type_traits. A type missing here (a newer one) is sized by the gap to the next
# tensor's offset instead, padding included.
# fmt: off
GGML_TYPE_SIZES: dict[int, tuple[int, int]] = {
    0: (1, 4), 1: (1, 2), 2: (32, 18), 3: (32, 20), 6: (32, 22), 7: (32, 24), 8: (32, 34), 9: (32, 36),
    10: (256, 84), 11: (256, 110), 12: (256, 144), 13: (256, 176), 14: (256, 210), 15: (256, 292),
    16: (256, 66), 17: (256, 74), 18: (256, 98), 19: (256, 50), 20: (32, 18), 21: (256, 110),
    22: (256, 82), 23: (256, 136), 24: (1, 1), 25: (1, 2), 26: (1, 4), 27: (1, 8), 28: (1, 8),
    29: (256, 56), 30: (1, 2), 34: (256, 54), 35: (256, 66), 39: (32, 17),
}
# fmt: on
_BLOCK_TENSOR = re.compile(r"^blk\.(?P<layer>\d+)\.(?P<rest>.+)$")
_U64 = struct.Struct("<Q")
_SHARD = re.compile(r"^(?P<stem>.+)-(?P<index>\d{5})-of-(?P<count>\d{5})\.gguf$")


class GgufError(ValueError):
    """The file is not a GGUF file this reader understands; the message names the path.

    ``kind``: ``not_gguf`` (wrong magic), ``truncated`` (ends inside the header
    or before its last tensor's data begins), ``unsupported`` (a version or value type this reader does not know) or
    ``unreadable`` (the file cannot be opened)."""

    def __init__(self, path: str | Path, reason: str, *, kind: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = str(path)
        self.reason = reason
        self.kind = kind


@dataclass(frozen=True)
class GgufHeader:
    """The facts a leaderboard needs from one model file's header.

    ``total_params`` sums the elements of every tensor (of every shard, for a
    split model whose shards sit next to each other); ``expert_params`` is the
    part in the routed experts' tensors (``*_exps``), from which
    ``active_params`` estimates what one token uses."""

    version: int
    tensor_count: int
    kv_count: int
    architecture: str
    name: str
    size_label: str
    file_type: int | None
    quantization: str
    block_count: int | None
    context_length: int | None
    expert_count: int | None
    expert_used_count: int | None
    embedding_length: int | None
    total_params: int | None
    expert_params: int | None
    split_count: int
    has_ssm: bool
    # The attention shape (the KV cache read per token) and the tensors' data sizes
    # (the weights read per token): None / {} in headers stored before they were read.
    head_count: int | None = None
    head_count_kv: int | None = None
    key_length: int | None = None
    value_length: int | None = None
    sliding_window: int | None = None
    tensor_bytes: int | None = None
    # Per repeating block: the tensor's name after ``blk.N.`` → its bytes in each
    # block (0 where a block lacks it), so an offload pattern (-ot) can be matched
    # against ``blk.N.<name>`` without a row per tensor.
    block_tensor_bytes: dict[str, list[int]] = field(default_factory=dict)
    other_tensor_bytes: dict[str, int] = field(default_factory=dict)

    @property
    def kind(self) -> str:
        """Return the service's architecture: 'moe' with routed experts, 'hybrid' for
        attention mixed with state-space layers, 'unknown' for a state-space model
        alone (Mamba), 'dense' otherwise."""
        if self.expert_count:
            return "moe"
        if self.has_ssm and self.architecture not in ("mamba", "mamba2"):
            return "hybrid"
        return "dense" if not self.has_ssm else "unknown"

    @property
    def active_params(self) -> int | None:
        """Return the parameters one token passes through: everything but the routed
        experts, plus ``expert_used_count`` of them. None if any count is missing."""
        if not self.expert_count:
            return self.total_params
        if self.total_params is None or self.expert_params is None or not self.expert_used_count:
            return None
        shared = self.total_params - self.expert_params
        return shared + self.expert_params * self.expert_used_count // self.expert_count

    def as_dict(self) -> dict[str, Any]:
        """Return the raw header facts (for the run's fingerprint) plus the derived kind."""
        return {**asdict(self), "kind": self.kind, "active_params": self.active_params}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> GgufHeader:
        """Return the header stored by ``as_dict`` (derived fields ignored)."""
        names = cls.__dataclass_fields__
        return cls(**{k: v for k, v in data.items() if k in names})


def quantization_name(file_type: int | None) -> str:
    """Return 'Q4_K_M' for llama_ftype 15; '' for None; 'ftype <n>' for an unknown number."""
    if file_type is None:
        return ""
    return LLAMA_FTYPES.get(file_type, f"ftype {file_type}")


def read_header(path: str | Path) -> GgufHeader:
    """Return the header of the GGUF file at ``path``; raise GgufError naming the path
    if it cannot be opened, is not GGUF, is truncated or uses an unknown version.

    For the first shard of a split model (``name-00001-of-00003.gguf``) whose other
    shards are beside it, the parameter counts cover every shard; if one is missing,
    they are None (a partial count would be wrong, not approximate)."""
    file_path = Path(path).expanduser()
    values, tensors = _parse(file_path)
    arch = str(values.get("general.architecture") or "")
    split_count = _as_int(values.get("split.count")) or 1
    if split_count > 1:  # the first shard may hold no tensors at all (--no-tensor-first-split)
        tensors = _shard_tensors(file_path, split_count, tensors)
    total = sum(t.elements for t in tensors) if tensors else None
    experts = sum(t.elements for t in tensors if _is_routed_expert(t.name)) if tensors else None
    # A vocabulary-only file has no tensors (its parameter count is unknown, not 0), and
    # a split model with a shard missing has an unknown count (a part would be wrong).
    sizes = _sizes(tensors) if tensors else None
    file_type = _as_int(values.get("general.file_type"))
    return GgufHeader(
        version=int(values["__version__"]),
        tensor_count=int(values["__tensor_count__"]),
        kv_count=int(values["__kv_count__"]),
        architecture=arch,
        name=str(values.get("general.name") or ""),
        size_label=str(values.get("general.size_label") or ""),
        file_type=file_type,
        quantization=quantization_name(file_type),
        block_count=_as_int(values.get(f"{arch}.block_count")),
        context_length=_as_int(values.get(f"{arch}.context_length")),
        expert_count=_as_int(values.get(f"{arch}.expert_count")),
        expert_used_count=_as_int(values.get(f"{arch}.expert_used_count")),
        embedding_length=_as_int(values.get(f"{arch}.embedding_length")),
        total_params=total,
        expert_params=experts,
        split_count=split_count,
        has_ssm=bool(values.get("__has_ssm__")),
        head_count=_as_int(values.get(f"{arch}.attention.head_count")),
        head_count_kv=_as_int(values.get(f"{arch}.attention.head_count_kv")),
        key_length=_as_int(values.get(f"{arch}.attention.key_length")),
        value_length=_as_int(values.get(f"{arch}.attention.value_length")),
        sliding_window=_as_int(values.get(f"{arch}.attention.sliding_window")),
        tensor_bytes=sizes[0] if sizes else None,
        block_tensor_bytes=sizes[1] if sizes else {},
        other_tensor_bytes=sizes[2] if sizes else {},
    )


@dataclass(frozen=True)
class _Tensor:
    name: str
    elements: int
    nbytes: int


def _sizes(tensors: list[_Tensor]) -> tuple[int, dict[str, list[int]], dict[str, int]]:
    """Return (all tensor bytes, {name after blk.N.: [bytes per block]}, {other name: bytes})."""
    per_block: dict[str, dict[int, int]] = {}
    other: dict[str, int] = {}
    blocks = 0
    for tensor in tensors:
        match = _BLOCK_TENSOR.match(tensor.name)
        if match is None:
            other[tensor.name] = other.get(tensor.name, 0) + tensor.nbytes
            continue
        layer = int(match.group("layer"))
        blocks = max(blocks, layer + 1)
        per_block.setdefault(match.group("rest"), {})[layer] = tensor.nbytes
    block_bytes = {rest: [by_layer.get(i, 0) for i in range(blocks)] for rest, by_layer in sorted(per_block.items())}
    return sum(t.nbytes for t in tensors), block_bytes, other


def _is_routed_expert(tensor_name: str) -> bool:
    # llama.cpp names the stacked routed-expert weights ffn_{gate,up,down,gate_up}_exps;
    # shared experts are *_shexp and always active.
    return "_exps." in tensor_name


def _shard_tensors(first: Path, count: int, tensors: list[_Tensor]) -> list[_Tensor]:
    """Return the tensors of every shard beside ``first``; [] when one is missing."""
    match = _SHARD.match(first.name)
    if match is None or int(match.group("index")) != 1:
        return []
    found = list(tensors)
    for index in range(2, count + 1):
        shard = first.with_name(f"{match.group('stem')}-{index:05d}-of-{match.group('count')}.gguf")
        try:
            _, more = _parse(shard)
        except GgufError:
            return []
        found.extend(more)
    return found


def _with_bytes(infos: list[tuple[str, int, int, int]], *, data_bytes: int) -> list[_Tensor]:
    """Return the tensors with their data sizes: elements / block × block bytes for a
    type ggml's table has, else the gap to the next tensor (or the file's end)."""
    ends = sorted({offset for *_, offset in infos} | {data_bytes})
    next_offset = {offset: ends[i + 1] for i, offset in enumerate(ends[:-1])}
    tensors = []
    for name, elements, ggml_type, offset in infos:
        size = GGML_TYPE_SIZES.get(ggml_type)
        nbytes = elements // size[0] * size[1] if size else next_offset.get(offset, offset) - offset
        tensors.append(_Tensor(name, elements, nbytes))
    return tensors


def _as_int(value: Any) -> int | None:
    return int(value) if isinstance(value, int) and not isinstance(value, bool) else None


def _parse(path: Path) -> tuple[dict[str, Any], list[_Tensor]]:
    """Return (the wanted key/values plus __version__/__tensor_count__/__kv_count__,
    the tensors: name, element count, bytes of data)."""
    try:
        with path.open("rb") as handle:
            size = path.stat().st_size
            if size < 24:
                head = handle.read(4)
                if not head:
                    raise GgufError(path, "not a GGUF file (the file is empty)", kind="not_gguf")
                if head != MAGIC[: len(head)]:
                    raise GgufError(path, f"not a GGUF file (starts with {head!r}, not {MAGIC!r})", kind="not_gguf")
                raise GgufError(path, f"truncated: {size} bytes, shorter than a GGUF header (24)", kind="truncated")
            with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as view:
                return _Walker(path, view).walk()
    except OSError as exc:
        raise GgufError(path, f"cannot read the file ({exc.strerror or exc})", kind="unreadable") from exc


class _Walker:
    """Reads the header of a mapped file front to back; every read checks the bounds."""

    def __init__(self, path: Path, view: mmap.mmap) -> None:
        self.path = path
        self.view = view
        self.size = len(view)
        self.pos = 0

    def _need(self, n: int, what: str) -> None:
        if n < 0 or self.pos + n > self.size:
            raise GgufError(
                self.path,
                f"truncated: {what} at byte {self.pos} needs {n} bytes, the file has {self.size}",
                kind="truncated",
            )

    def _fixed(self, vtype: int, what: str) -> Any:
        fmt, width = _FIXED[vtype]
        self._need(width, what)
        (value,) = struct.unpack_from(fmt, self.view, self.pos)
        self.pos += width
        return value

    def _string(self, what: str) -> str:
        length = self._fixed(_UINT64, what)
        self._need(length, what)
        raw = self.view[self.pos : self.pos + length]
        self.pos += length
        return raw.decode("utf-8", "replace")

    def _skip_string(self, what: str) -> None:
        length = self._fixed(_UINT64, what)
        self._need(length, what)
        self.pos += length

    def _skip_strings(self, count: int, what: str) -> None:
        # The one costly walk (a tokenizer's 262k strings): each length must be read
        # to find the next, so the loop stays tight, with locals only.
        view, pos, size, length_at = self.view, self.pos, self.size, _U64.unpack_from
        for _ in range(count):
            if pos + 8 > size:
                break
            pos += 8 + length_at(view, pos)[0]
        else:
            if pos <= size:
                self.pos = pos
                return
        self.pos = min(pos, size)
        raise GgufError(self.path, f"truncated: {what} runs past the end of the file ({size} bytes)", kind="truncated")

    def walk(self) -> tuple[dict[str, Any], list[_Tensor]]:
        magic = bytes(self.view[:4])
        if magic != MAGIC:
            raise GgufError(self.path, f"not a GGUF file (starts with {magic!r}, not {MAGIC!r})", kind="not_gguf")
        self.pos = 4
        version = self._fixed(_UINT32, "the version")
        if version not in SUPPORTED_VERSIONS:
            # A big-endian file reads as a huge version number here.
            swapped = struct.unpack("<I", struct.pack(">I", version))[0]
            hint = " (a big-endian file?)" if swapped in SUPPORTED_VERSIONS else ""
            raise GgufError(
                self.path, f"GGUF version {version}{hint} is not supported (only 2 and 3)", kind="unsupported"
            )
        tensor_count = self._fixed(_UINT64, "the tensor count")
        kv_count = self._fixed(_UINT64, "the key/value count")
        # Each key/value takes at least 12 bytes and each tensor info 24: a count past
        # that is a corrupt header, not a reason to loop for minutes.
        if kv_count * 12 + tensor_count * 24 > self.size:
            raise GgufError(
                self.path,
                f"truncated: the header announces {kv_count} key/values and {tensor_count} tensors, "
                f"more than {self.size} bytes can hold",
                kind="truncated",
            )
        values: dict[str, Any] = {"__version__": version, "__tensor_count__": tensor_count, "__kv_count__": kv_count}
        for index in range(kv_count):
            key = self._string(f"key {index}")
            vtype = self._fixed(_UINT32, f"the type of {key!r}")
            if ".ssm." in key:
                values["__has_ssm__"] = True
            # ``<arch>.block_count`` etc. are kept for any arch: the architecture key
            # names which one counts, and nothing fixes the order of the keys.
            if (key in _GENERAL_KEYS or key.partition(".")[2] in _ARCH_KEYS) and vtype != _ARRAY:
                values[key] = self._value(vtype, key)
            else:
                self._skip(vtype, key)
        infos: list[tuple[str, int, int, int]] = []
        last_name, last_offset = "", -1
        for index in range(tensor_count):
            name = self._string(f"the name of tensor {index}")
            n_dims = self._fixed(_UINT32, f"the dimensions of {name!r}")
            if n_dims > GGML_MAX_DIMS:
                raise GgufError(self.path, f"tensor {name!r} has {n_dims} dimensions (at most 4)", kind="unsupported")
            elements = 1
            for _ in range(n_dims):
                elements *= self._fixed(_UINT64, f"a dimension of {name!r}")
            ggml_type = self._fixed(_UINT32, f"the type of {name!r}")
            offset = self._fixed(_UINT64, f"the offset of {name!r}")
            if offset > last_offset:
                last_name, last_offset = name, offset
            infos.append((name, elements, ggml_type, offset))
        # The data is not read, but a download cut short shows here: the last
        # tensor must start inside the file.
        alignment = _as_int(values.get("general.alignment")) or DEFAULT_ALIGNMENT
        data_start = -(-self.pos // alignment) * alignment
        if infos and data_start + last_offset >= self.size:
            raise GgufError(
                self.path,
                f"truncated: tensor {last_name!r} starts at byte {data_start + last_offset}, the file has {self.size}",
                kind="truncated",
            )
        return values, _with_bytes(infos, data_bytes=self.size - data_start)

    def _value(self, vtype: int, key: str) -> Any:
        if vtype == _STRING:
            return self._string(key)
        if vtype in _FIXED:
            return self._fixed(vtype, key)
        raise GgufError(self.path, f"{key!r} has an unknown value type {vtype}", kind="unsupported")

    def _skip(self, vtype: int, key: str) -> None:
        if vtype == _STRING:
            self._skip_string(key)
        elif vtype in _FIXED:
            width = _FIXED[vtype][1]
            self._need(width, key)
            self.pos += width
        elif vtype == _ARRAY:
            item_type = self._fixed(_UINT32, f"the item type of {key!r}")
            count = self._fixed(_UINT64, f"the length of {key!r}")
            if item_type in _FIXED:
                width = _FIXED[item_type][1]
                self._need(count * width, key)
                self.pos += count * width
            elif item_type == _STRING:
                self._skip_strings(count, key)
            elif item_type == _ARRAY:
                for _ in range(count):
                    self._skip(_ARRAY, key)
            else:
                raise GgufError(self.path, f"{key!r} is an array of unknown type {item_type}", kind="unsupported")
        else:
            raise GgufError(self.path, f"{key!r} has an unknown value type {vtype}", kind="unsupported")

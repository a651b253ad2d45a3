"""Comparison keys: when two runs measure the same thing.

Like the key properties of llama.cpp's compare-llama-bench.py, but at the level
Rigboard ranks on: the same hardware, the same model file and the same
workload. Flags (configuration, stack) are recorded and shown but are what a
comparison varies, so they are not part of the key. ``config_hash`` is the
stricter key regression verdicts add on top.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from typing import Any


def _digest(payload: Any) -> str:
    blob = json.dumps(payload, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


def hardware_identity(gpus: Iterable[Mapping[str, Any]]) -> list[list[Any]]:
    """Return the GPUs as a sorted list of [model (lowercased), count]; order of entry does not matter."""
    merged: dict[str, int] = {}
    for gpu in gpus:
        model = str(gpu.get("model") or "").strip().lower()
        merged[model] = merged.get(model, 0) + int(gpu.get("count") or 1)
    return sorted([model, count] for model, count in merged.items())


def comparison_key(*, gpus: Iterable[Mapping[str, Any]], model_identity: str, workload_identity: str) -> str:
    """Return the sha256 that two runs share exactly when they ran on the same
    GPUs, the same model file and the same workload."""
    return _digest({"gpus": hardware_identity(gpus), "model": model_identity, "workload": workload_identity})


def config_hash(configuration: Mapping[str, Any]) -> str:
    """Return the sha256 of a configuration's fields (keys sorted, blanks kept)."""
    return _digest({k: configuration[k] for k in sorted(configuration) if k != "config_hash"})

"""The fingerprint: rig facts and the model file's sha256, cached by path + size + mtime."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from runners.delivery.payload import quantization_from_ftype
from runners.harness.fingerprint import capture, file_sha256
from runners.harness.power import PowerMonitor


def test_it_hashes_a_model_file_once_and_rehashes_it_when_it_changes(tmp_path: Path) -> None:
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF" + b"\0" * 1000)
    first = file_sha256(model, cache_dir=tmp_path / "cache")
    assert first == hashlib.sha256(model.read_bytes()).hexdigest()
    cache = json.loads((tmp_path / "cache" / "sha256-cache.json").read_text())
    assert list(cache.values()) == [first]

    # The cache answers while path, size and mtime match (proved by planting a value)…
    key = next(iter(cache))
    (tmp_path / "cache" / "sha256-cache.json").write_text(json.dumps({key: "planted"}))
    assert file_sha256(model, cache_dir=tmp_path / "cache") == "planted"
    # …and a changed file is hashed again, its stale entry dropped.
    model.write_bytes(b"GGUF" + b"\1" * 1000)
    os.utime(model, ns=(1, 2))
    second = file_sha256(model, cache_dir=tmp_path / "cache")
    assert second == hashlib.sha256(model.read_bytes()).hexdigest()
    assert list(json.loads((tmp_path / "cache" / "sha256-cache.json").read_text()).values()) == [second]


def test_it_captures_the_rig_without_a_gpu(tmp_path: Path) -> None:
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")
    monitor = PowerMonitor()  # never opened: no NVML
    fingerprint = capture(
        monitor=monitor, engine="llama.cpp", build="b1-abc", model_path=str(model), cache_dir=tmp_path
    )
    assert fingerprint["gpus"] == [] and fingerprint["gpu_reason"] == "NVML not opened"
    assert fingerprint["cpu"] and fingerprint["cpu_cores"] == os.cpu_count()
    assert fingerprint["ram_gb"] is None or fingerprint["ram_gb"] > 0
    assert fingerprint["os"] and fingerprint["kernel"]
    assert fingerprint["model"] == {
        "file_name": "m.gguf",
        "file_size_bytes": 4,
        "sha256": hashlib.sha256(b"GGUF").hexdigest(),
        # Four bytes are the magic alone: the header facts are missing, and the reason says why.
        "gguf_error": "m.gguf: truncated: 4 bytes, shorter than a GGUF header (24)",
    }


def test_it_shortens_llama_cpp_ftype_names() -> None:
    assert quantization_from_ftype("Q4_K - Medium") == "Q4_K_M"
    assert quantization_from_ftype("Q6_K") == "Q6_K"

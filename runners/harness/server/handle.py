"""What the suite needs from a server, launched or attached: its HTTP side
(health, /props, /v1/models) and the model file's header."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import requests

from runners.config import GENERIC_OPENAI
from runners.harness.gguf import GgufError, GgufHeader, read_header

# Request fields only some servers take; a strict OpenAI-compatible server may
# refuse a request carrying them, so the generic API never sends them.
NON_OPENAI_FIELDS = ("cache_prompt", "chat_template_kwargs", "top_k", "min_p")


class ServerHandle:
    """What the suite needs from a server, launched or attached.

    ``engine`` is the service's engine name; ``api`` is what the runner may ask
    of the server: ``llama.cpp`` (llama-server's own endpoints and timings),
    ``vllm`` (OpenAI's API plus /tokenize and the /metrics spec-decode counters)
    or ``openai`` (only /v1: no server timings, tokenizer or context size).
    ``unavailable`` says, per figure the server could not give, why it is null.
    ``gguf`` is the model file's header when the file is local and readable,
    else ``gguf_error`` says why not (empty when no local file is known)."""

    managed = False

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url.rstrip("/")
        self.engine = "llama.cpp"
        self.api = "llama.cpp"
        self.build = ""
        self.n_ctx: int | None = None
        self.props: dict[str, Any] = {}
        self.model_meta: dict[str, Any] = {}
        self.model_id = ""
        self.model_path = ""
        self.gguf: GgufHeader | None = None
        self.gguf_error = ""
        self.command_line = ""
        self.headers: dict[str, str] = {}
        self.unavailable: dict[str, str] = {}

    @property
    def server_timings(self) -> bool:
        """Return True when each response carries the server's own timings (llama.cpp's)."""
        return self.api == "llama.cpp"

    def alive(self) -> tuple[bool, str]:
        """Return (True, '') while the server can answer; else (False, why)."""
        path = "/health" if self.api == "llama.cpp" else "/v1/models"
        try:
            resp = requests.get(f"{self.base_url}{path}", timeout=5, headers=self.headers)
        except requests.RequestException as exc:
            return False, f"server at {self.base_url} is unreachable: {exc}"
        return (resp.status_code < 500), f"{path} answered {resp.status_code}"

    def adapt(self, body: dict[str, Any]) -> dict[str, Any]:
        """Return the request ``body`` without the fields this server's API does not take."""
        if self.api != GENERIC_OPENAI:
            return body
        return {k: v for k, v in body.items() if k not in NON_OPENAI_FIELDS}

    def log_tail(self, lines: int = 80) -> str:
        return ""

    def stop(self) -> None:
        return None

    def read_model_header(self, path: str) -> GgufError | None:
        """Read the GGUF header of the local model file at ``path`` into ``gguf`` (or
        why not into ``gguf_error``) and return the error, if any. A path this
        machine does not have (the server runs elsewhere) is noted, not an error."""
        self.model_path = path
        if not path:
            return None
        if not Path(path).expanduser().is_file():
            self.gguf_error = f"{Path(path).name}: not on this machine (the server runs elsewhere?)"
            return None
        try:
            self.gguf = read_header(path)
        except GgufError as exc:
            self.gguf_error = f"{Path(path).name}: {exc.reason}"
            return exc
        return None

    def describe(self, session: requests.Session) -> None:
        """Read /props (the llama.cpp API only) and /v1/models: n_ctx, build, model
        metadata; note in ``unavailable`` what the server did not tell."""
        if self.api == "llama.cpp" and not self.props:
            self._read_props(session)
        with contextlib.suppress(requests.RequestException, ValueError):
            resp = session.get(f"{self.base_url}/v1/models", timeout=10, headers=self.headers)
            if resp.status_code == 200:
                data = (resp.json().get("data") or [{}])[0]
                self.model_id = self.model_id or str(data.get("id") or "")
                self.model_meta = dict(data.get("meta") or {}) if self.api == "llama.cpp" else {}
                # vLLM reports the context length on the model entry.
                max_len = data.get("max_model_len")
                if self.n_ctx is None and isinstance(max_len, int):
                    self.n_ctx = max_len
                if self.n_ctx is None and isinstance(self.model_meta.get("n_ctx"), int):
                    self.n_ctx = self.model_meta["n_ctx"]
        asked = "/props n_ctx, /v1/models max_model_len" if self.api == "llama.cpp" else "/v1/models max_model_len"
        if self.n_ctx is None:
            self.unavailable["n_ctx"] = f"the server reported no context size ({asked})"
        if not self.build:
            self.unavailable["build"] = (
                "the server reported no build (/props build_info)"
                if self.api == "llama.cpp"
                else f"the {self.api} API reports no build: set [stack] build"
            )
        if not self.server_timings:
            self.unavailable["server_timings"] = (
                f"the {self.api} API gives no per-request timings: decode_tokens_per_s_server and "
                "prefill_tokens_per_s are null and decode t/s is the client's; draft counts "
                + ("come from /metrics" if self.api == "vllm" else "are null")
            )

    def _read_props(self, session: requests.Session) -> None:
        with contextlib.suppress(requests.RequestException, ValueError):
            resp = session.get(f"{self.base_url}/props", timeout=10, headers=self.headers)
            props = resp.json() if resp.status_code == 200 else None
            if isinstance(props, dict):
                self.props = props
                n_ctx = (props.get("default_generation_settings") or {}).get("n_ctx")
                self.n_ctx = n_ctx if isinstance(n_ctx, int) else self.n_ctx
                self.build = self.build or str(props.get("build_info") or "")

    def __enter__(self) -> ServerHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

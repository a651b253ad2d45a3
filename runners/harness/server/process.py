"""A llama-server process this runner owns: launched, waited on until healthy, its
log read for why it failed, stopped.

Every way a launch can go wrong becomes a ServerError with a ``kind`` and the
server's log tail *before* any repetition is measured, so a bad config never
produces a counted run. A launched server does not outlive its runner: see
runners/harness/orphans.py."""

from __future__ import annotations

import contextlib
import logging
import os
import re
import signal
import socket
import subprocess
import tempfile
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path

import requests

from runners.config import ConfigError, ServerConfig, command_line_text
from runners.env import server_nice
from runners.harness.orphans import die_with_parent, record_server, stop_orphans, watch_from_outside
from runners.harness.server.binary import read_version, resolve_binary
from runners.harness.server.errors import ServerError, ServerFailure
from runners.harness.server.handle import ServerHandle

logger = logging.getLogger(__name__)

# (kind, pattern in the server's log, what to tell the user), checked in order.
_FAILURE_PATTERNS = [
    (
        ServerFailure.UNKNOWN_FLAG,
        re.compile(r"(invalid argument|unknown argument|error while handling argument).*", re.I),
        "llama-server rejected a flag",
    ),
    (
        ServerFailure.OUT_OF_MEMORY,
        re.compile(r".*(out of memory|failed to allocate|cudaMalloc failed|unable to allocate).*", re.I),
        "out of memory while loading",
    ),
    (
        ServerFailure.PORT_IN_USE,
        re.compile(r".*(couldn't bind|address already in use|failed to bind).*", re.I),
        "the port is taken",
    ),
    (
        ServerFailure.MODEL_LOAD_FAILED,
        re.compile(r".*(failed to load model|failed to open gguf|error loading model).*", re.I),
        "the model failed to load",
    ),
]


def _preexec(parent_death: Callable[[], None] | None, nice: int | None) -> Callable[[], None] | None:
    """Return what the child runs before exec: the parent-death signal, then the
    niceness (set before exec, so every thread llama-server starts inherits it;
    Linux keeps a niceness per thread). None when neither applies."""
    if nice is None:
        return parent_death

    def _run() -> None:
        if parent_death is not None:
            parent_death()
        os.setpriority(os.PRIO_PROCESS, 0, nice)

    return _run


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
            raise ServerError(f"server.model: {bad}", kind=ServerFailure.BAD_MODEL)
        self.build = read_version(binary)
        port = self.config.port or free_port(self.config.host)
        if self.config.port and not port_is_free(self.config.host, port):
            raise ServerError(
                f"server.port: {self.config.host}:{port} is already in use", kind=ServerFailure.PORT_IN_USE
            )
        self.argv = [binary, *self.config.argv(port=port)[1:]]
        self.command_line = command_line_text(self.argv)
        self.base_url = f"http://{self.config.host}:{port}"
        if self.state_dir is not None:
            self.orphans_stopped = stop_orphans(self.state_dir)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        parent_death = die_with_parent()
        nice = server_nice()
        with self.log_path.open("wb") as log:
            # Own session: the stop signal reaches the server, not our process group.
            try:
                self.process = subprocess.Popen(
                    self.argv,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                    preexec_fn=_preexec(parent_death, nice),  # noqa: PLW1509 - a prctl, getppid, setpriority
                )
            except subprocess.SubprocessError as exc:  # the child could not take the niceness
                raise ServerError(
                    f"RIGBOARD_SERVER_NICE={nice}: llama-server could not be started at that niceness "
                    "(below the worker's own needs root, CAP_SYS_NICE or RLIMIT_NICE)",
                    kind=ServerFailure.EXITED,
                ) from exc
        if nice is not None:
            logger.info("llama-server %s runs at niceness %d (RIGBOARD_SERVER_NICE)", self.process.pid, nice)
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
            raise ServerError("llama-server was not started", kind=ServerFailure.EXITED)
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
            kind=ServerFailure.STARTUP_TIMEOUT,
            log_tail=self.log_tail(),
        )

    def _launch_failure(self, code: int) -> ServerError:
        tail = self.log_tail()
        how = f"killed by signal {-code}" if code < 0 else f"exit code {code}"
        for kind, pattern, summary in _FAILURE_PATTERNS:
            match = pattern.search(tail)
            if match:
                return ServerError(f"{summary}: {match.group(0).strip()} ({how})", kind=kind, log_tail=tail)
        return ServerError(f"llama-server exited while loading ({how})", kind=ServerFailure.EXITED, log_tail=tail)

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

"""RIGBOARD_SERVER_NICE: the rig's llama-servers run at a niceness, every thread of
them, so a neighbour at 0 cannot halve a 1-thread server's speed and widen the
nightly's noise floor; a niceness the server cannot get starts no server and
says why. Real llama-server + Gemma 3 270M."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from runners.config import ServerConfig
from runners.env import RigEnv, RigEnvError, server_nice
from runners.harness.server import LlamaServer, ServerError


def test_a_niceness_is_read_as_one_from_minus_20_to_19_naming_the_variable():
    assert server_nice({}) is None
    assert server_nice({"RIGBOARD_SERVER_NICE": "-10"}) == -10
    assert server_nice({"RIGBOARD_SERVER_NICE": "19"}) == 19
    assert RigEnv.read({"RIGBOARD_SERVER_NICE": "5"}).server_nice == 5
    with pytest.raises(RigEnvError, match="RIGBOARD_SERVER_NICE must be an integer, got 'high'"):
        RigEnv.read({"RIGBOARD_SERVER_NICE": "high"})
    with pytest.raises(RigEnvError, match="RIGBOARD_SERVER_NICE must be a niceness from -20 to 19, got -21"):
        server_nice({"RIGBOARD_SERVER_NICE": "-21"})


def _server(llama_server_bin: Path, gemma_gguf: Path, tmp_path: Path) -> LlamaServer:
    config = ServerConfig(binary=str(llama_server_bin), model=str(gemma_gguf), ctx_size=512, threads=2)
    return LlamaServer(config, log_dir=tmp_path)


@pytest.mark.llama
def test_every_thread_of_the_server_runs_at_the_rigs_niceness(
    llama_server_bin: Path, gemma_gguf: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A niceness above the runner's own needs no privilege: the test holds wherever it runs.
    own = os.getpriority(os.PRIO_PROCESS, 0)
    nice = min(own + 5, 19)
    monkeypatch.setenv("RIGBOARD_SERVER_NICE", str(nice))
    server = _server(llama_server_bin, gemma_gguf, tmp_path).start()
    try:
        assert server.process is not None
        threads = [int(tid) for tid in os.listdir(f"/proc/{server.process.pid}/task")]
        assert len(threads) > 1  # the HTTP and compute threads llama-server started after exec
        assert {os.getpriority(os.PRIO_PROCESS, tid) for tid in threads} == {nice}
    finally:
        server.stop()
    assert os.getpriority(os.PRIO_PROCESS, 0) == own  # the runner's own is untouched


@pytest.mark.llama
def test_a_niceness_the_server_cannot_get_starts_no_server_and_names_the_variable(
    llama_server_bin: Path, gemma_gguf: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refused(which: int, who: int, prio: int) -> None:  # what the kernel answers an unprivileged -10
        raise PermissionError(1, "Operation not permitted")

    # The child is forked from this process: it calls the patched function before exec.
    monkeypatch.setattr(os, "setpriority", refused)
    monkeypatch.setenv("RIGBOARD_SERVER_NICE", "-10")
    server = _server(llama_server_bin, gemma_gguf, tmp_path)
    with pytest.raises(ServerError, match=r"RIGBOARD_SERVER_NICE=-10: llama-server could not be started"):
        server.start()
    assert server.process is None

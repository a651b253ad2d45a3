"""``rigboard-runner doctor`` against each failure it names, on a config ``init`` wrote:
a live Rigboard (PostgreSQL), the real llama-server and Gemma 3 270M. There is no GPU
here, so NVML is simulated at the ``pynvml`` module (the one boundary): absent, or a
fake with a GPU too small for the model."""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from leaderboard.results.models import Rig
from runners import cli
from runners.harness.server import free_port
from tests.fixtures.llama import TEST_THREADS
from tests.runners.test_power import fake_pynvml
from tests.runners.unwritable import read_only_dir

pytestmark = pytest.mark.llama


@pytest.fixture
def rig_toml(
    monkeypatch: pytest.MonkeyPatch,
    live_server: Any,
    cpu_rig: tuple[Rig, str],
    llama_server_bin: Path,
    gemma_gguf: Path,
    tmp_path: Path,
) -> Path:
    """A rig.toml for cpu-rig written by ``init`` (the rig's name asked of the service); no NVML."""
    monkeypatch.setitem(sys.modules, "pynvml", None)
    path = tmp_path / "rig.toml"
    args = ["init", "--non-interactive", "--config", str(path), "--url", live_server.url, "--token", cpu_rig[1],
            "--server", str(llama_server_bin), "--model", str(gemma_gguf), "--threads", str(TEST_THREADS),
            "--spool-dir", str(tmp_path / "spool")]  # fmt: skip
    assert cli.main(args) == 0
    return path


def doctor(path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, str]]:
    """Return the exit code and each check's line by name."""
    code = cli.main(["doctor", "--config", str(path)])
    lines = capsys.readouterr().out.splitlines()
    checks = {m.group(2): line for line in lines if (m := re.match(r"(ok|warn|FAIL) +([a-z ]+): ", line))}
    return code, checks


def edit(path: Path, key: str, value: str) -> None:
    text = path.read_text()
    new, n = re.subn(rf"(?m)^{key} = .*$", f"{key} = {value}", text)
    assert n == 1, key
    path.write_text(new)


def test_a_healthy_cpu_rig_passes_and_is_told_what_it_cannot_measure(
    rig_toml: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, checks = doctor(rig_toml, capsys)
    assert code == 0, checks
    assert set(checks) == {
        "power",
        "server",
        "server flags",
        "model",
        "service",
        "token",
        "rig record",
        "clock",
        "spool",
    }
    assert checks["power"].startswith("warn power: no power source (nvml: pynvml (nvidia-ml-py) is not installed")
    assert "energy_j" in checks["power"]
    assert all(line.startswith("ok") for name, line in checks.items() if name != "power"), checks
    assert "valid for rig 'cpu-rig'" in checks["token"]


def test_a_bad_token_fails(rig_toml: Path, capsys: pytest.CaptureFixture[str]) -> None:
    edit(rig_toml, "token", '"rb_not-this-rigs-token"')
    code, checks = doctor(rig_toml, capsys)
    assert code == 1
    assert checks["token"].startswith("FAIL token: refused") and "issue a new token" in checks["token"]
    assert checks["service"].startswith("ok")


def test_a_token_of_another_rig_fails(rig_toml: Path, capsys: pytest.CaptureFixture[str]) -> None:
    edit(rig_toml, "rig", '"someone-else"')
    code, checks = doctor(rig_toml, capsys)
    assert code == 1 and "the token is rig 'cpu-rig'" in checks["token"]


def test_a_service_that_is_down_fails(rig_toml: Path, capsys: pytest.CaptureFixture[str]) -> None:
    edit(rig_toml, "url", f'"http://127.0.0.1:{free_port("127.0.0.1")}"')
    code, checks = doctor(rig_toml, capsys)
    assert code == 1
    assert checks["service"].startswith("FAIL service: no answer from") and "check service.url" in checks["service"]
    assert "token" not in checks


def test_a_missing_binary_fails(rig_toml: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    edit(rig_toml, "binary", f'"{tmp_path}/no-build/llama-server"')
    code, checks = doctor(rig_toml, capsys)
    assert code == 1
    assert checks["server"].startswith("FAIL server: server.binary: no executable file at")
    assert "rigboard-runner init --server" in checks["server"]


def test_a_flag_the_server_does_not_know_fails(rig_toml: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = rig_toml.read_text().replace("parallel = 1", 'parallel = 1\nextra_args = ["--no-such-flag"]')
    rig_toml.write_text(text)
    code, checks = doctor(rig_toml, capsys)
    assert code == 1 and checks["server flags"].startswith(
        "FAIL server flags: this llama-server does not know --no-such-flag"
    )


def test_a_model_too_large_for_the_vram_fails(
    rig_toml: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    small = fake_pynvml(watts=[50.0], energy_counter=[True])
    small.nvmlDeviceGetMemoryInfo = lambda h: types.SimpleNamespace(total=128 * 1024**2, used=0)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "pynvml", small)
    edit(rig_toml, "n_gpu_layers", "99")
    code, checks = doctor(rig_toml, capsys)
    assert code == 1
    assert re.search(
        r"FAIL model: .*\.gguf: GGUF Q4_K_M, 0\.\d\d GiB does not fit the 0\.1 GiB of VRAM", checks["model"]
    )
    assert checks["power"].startswith("ok   power: nvml: NVIDIA GeForce RTX 3090 (128 MiB), energy counter present")
    # The service's record of cpu-rig has no GPU: the one detected differs.
    assert checks["rig record"].startswith("FAIL rig record: GPUs: detected 1× NVIDIA GeForce RTX 3090, recorded none")


def test_a_file_that_is_not_gguf_fails(rig_toml: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fake = tmp_path / "model.gguf"
    fake.write_bytes(b"<html>not found</html>")
    edit(rig_toml, "model", f'"{fake}"')
    code, checks = doctor(rig_toml, capsys)
    assert code == 1 and checks["model"].startswith("FAIL model: model.gguf:")


def test_a_read_only_spool_fails(rig_toml: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with read_only_dir(tmp_path / "ro") as folder:
        edit(rig_toml, "spool_dir", f'"{folder}"')
        code, checks = doctor(rig_toml, capsys)
    assert code == 1
    assert (
        checks["spool"].startswith(f"FAIL spool: cannot write in {folder}") and "service.spool_dir" in checks["spool"]
    )


def test_a_clock_a_minute_off_fails(
    rig_toml: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The rig's clock is read in one place (``rig_clock``); the service's (same process here) is not moved."""
    import runners.onboard.service as service

    real_clock = service.rig_clock
    monkeypatch.setattr(service, "rig_clock", lambda: real_clock() + 300)
    code, checks = doctor(rig_toml, capsys)
    assert code == 1 and checks["clock"].startswith("FAIL clock: this rig's clock is +30")


def test_a_config_it_cannot_read_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "rig.toml").write_text("[server]\nctx_size = 'big'\n")
    assert cli.main(["doctor", "--config", str(tmp_path / "rig.toml")]) == 2
    assert "FAIL config: server.ctx_size: expected an integer" in capsys.readouterr().out


def test_update_rig_puts_the_detected_hardware_on_the_service(
    rig_toml: Path, cpu_rig: tuple[Rig, str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml(watts=[50.0, 50.0], energy_counter=[True, True]))
    code, checks = doctor(rig_toml, capsys)
    assert checks["rig record"].startswith("FAIL rig record: GPUs: detected 2× NVIDIA GeForce RTX 3090, recorded none")
    assert "--update-rig" in checks["rig record"]
    assert cli.main(["doctor", "--config", str(rig_toml), "--update-rig"]) in (0, 1)
    assert "ok   rig record: updated on the service: 2× NVIDIA GeForce RTX 3090" in capsys.readouterr().out
    assert [(g.model, g.count, g.vram_gb) for g in cpu_rig[0].gpus.all()] == [("NVIDIA GeForce RTX 3090", 2, 24.0)]
    code, checks = doctor(rig_toml, capsys)
    assert checks["rig record"].startswith("ok   rig record: the service's record matches the detected GPUs and RAM")

"""``rigboard-runner init``: finds the rig's GPUs (NVML simulated at the ``pynvml`` module,
the one boundary: no GPU here), the real llama-server of the test build and GGUF files,
and writes a rig.toml the config loader takes as it is."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import pytest

from runners import cli
from runners.config import load_rig_config
from runners.onboard import init as init_cli
from runners.onboard.detect import describe_server, detect_rig, find_gguf
from runners.onboard.service import parse_site_line, rig_commands, site_line
from tests.runners.test_power import fake_pynvml

pytestmark = pytest.mark.llama


def init_args(tmp_path: Path, *extra: str) -> list[str]:
    return ["init", "--non-interactive", "--config", str(tmp_path / "rig.toml"), *extra]


def test_it_writes_a_working_commented_config_from_flags(
    monkeypatch: pytest.MonkeyPatch, llama_server_bin: Path, gemma_gguf: Path, tmp_path: Path
) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml(watts=[150.0, 90.0], energy_counter=[True, True]))
    line = site_line("http://rigboard.test", "rb_secret")
    code = cli.main(
        init_args(
            tmp_path,
            "--site-line",
            line,
            "--rig",
            "olares-one",
            "--server",
            str(llama_server_bin),
            "--model",
            str(gemma_gguf),
            "--ctx-size",
            "2048",
        )  # fmt: skip
    )
    assert code == 0
    path = tmp_path / "rig.toml"
    assert path.stat().st_mode & 0o777 == 0o600  # it holds the token
    text = path.read_text()
    assert "#   GPU 1: NVIDIA GeForce RTX 3090, 24576 MiB VRAM, power limit 350.0 W, driver 580.65" in text
    assert "backends: CPU" in text
    config = load_rig_config(path)
    assert (config.service.url, config.service.token, config.service.rig) == (
        "http://rigboard.test",
        "rb_secret",
        "olares-one",
    )
    assert config.server is not None
    assert config.server.binary == str(llama_server_bin.resolve())
    assert config.server.model == str(gemma_gguf.resolve())
    assert (config.server.ctx_size, config.server.n_gpu_layers) == (2048, 99)  # GPUs seen: all layers on them


def test_without_nvml_it_writes_a_cpu_config_and_says_why(
    monkeypatch: pytest.MonkeyPatch, llama_server_bin: Path, gemma_gguf: Path, tmp_path: Path
) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)
    models = tmp_path / "models"  # the test cache may hold other GGUF files: a folder with Gemma alone
    models.mkdir()
    (models / gemma_gguf.name).symlink_to(gemma_gguf)
    args = init_args(tmp_path, "--url", "http://rigboard.test", "--token", "rb_x", "--rig", "cpu",
                     "--server", str(llama_server_bin), "--models", str(models))  # fmt: skip
    assert cli.main(args) == 0
    text = (tmp_path / "rig.toml").read_text()
    assert "no GPU figures (nvml: pynvml (nvidia-ml-py) is not installed" in text
    config = load_rig_config(tmp_path / "rig.toml")
    assert config.server is not None and config.server.n_gpu_layers == 0


def test_it_refuses_what_it_cannot_choose_alone_naming_the_flag(
    llama_server_bin: Path, gemma_gguf: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    models = tmp_path / "models"
    models.mkdir()
    for name in ("a.gguf", "b.gguf"):
        os.link(gemma_gguf, models / name)
    base = ["--url", "http://rigboard.test", "--token", "rb_x", "--rig", "r", "--server", str(llama_server_bin)]
    assert cli.main(init_args(tmp_path, *base, "--models", str(models))) == 2
    err = capsys.readouterr().err
    assert "2 GGUF files under" in err and "give --model, one of" in err
    assert (
        cli.main(init_args(tmp_path, *base[:-2], "--server", str(tmp_path / "nothing"), "--model", str(gemma_gguf)))
        == 2
    )
    assert "no working llama-server at" in capsys.readouterr().err
    assert cli.main(init_args(tmp_path, "--token", "rb_x", "--server", str(llama_server_bin))) == 2
    assert "give --url or --site-line" in capsys.readouterr().err
    (tmp_path / "rig.toml").write_text("")
    assert cli.main(init_args(tmp_path, *base, "--model", str(gemma_gguf))) == 2
    assert "exists: give --force" in capsys.readouterr().err


def test_on_a_terminal_it_asks_for_the_site_line_and_the_model(
    llama_server_bin: Path, gemma_gguf: Path, tmp_path: Path
) -> None:
    models = tmp_path / "models"
    (models / "sub").mkdir(parents=True)
    os.link(gemma_gguf, models / "a.gguf")
    os.link(gemma_gguf, models / "sub" / "b.gguf")
    answers = iter([site_line("http://rigboard.test", "rb_typed") + " rig=typed-rig", str(models), "2"])
    asked: list[str] = []

    def ask(question: str) -> str:
        asked.append(question)
        return next(answers)

    args = argparse.Namespace(
        config=str(tmp_path / "rig.toml"), site_line="", url="", token="", rig="", server=[str(llama_server_bin)],
        model="", models=[], ctx_size=4096, n_gpu_layers=None, threads=None, spool_dir="~/spool", force=False,
        non_interactive=False,
    )  # fmt: skip
    assert init_cli._init(args, ask) == 0
    assert len(asked) == 3 and asked[0].startswith("Paste the line")
    config = load_rig_config(tmp_path / "rig.toml")
    assert config.service.token == "rb_typed" and config.service.rig == "typed-rig"
    assert config.server is not None and config.server.model == str((models / "sub" / "b.gguf").resolve())


def test_it_finds_gguf_files_by_name_or_magic_and_only_the_first_shard(tmp_path: Path) -> None:
    (tmp_path / "deep" / "er").mkdir(parents=True)
    (tmp_path / "m.gguf").write_bytes(b"GGUF\x03\x00\x00\x00")
    (tmp_path / "deep" / "er" / "big-00001-of-00002.gguf").write_bytes(b"GGUF")
    (tmp_path / "deep" / "er" / "big-00002-of-00002.gguf").write_bytes(b"GGUF")
    (tmp_path / "notes.txt").write_text("GGUF? no")
    found = [Path(m.path).name for m in find_gguf([str(tmp_path)])]
    assert found == ["big-00001-of-00002.gguf", "m.gguf"]
    assert find_gguf([str(tmp_path / "missing")]) == []


def test_it_reads_the_build_and_backends_of_llama_server(llama_server_bin: Path, tmp_path: Path) -> None:
    build = describe_server(str(llama_server_bin))
    assert build.error == "" and build.version and "CPU" in build.backends
    broken = tmp_path / "llama-server"
    broken.write_text("#!/bin/sh\nexit 1\n")
    broken.chmod(0o755)
    assert describe_server(str(broken)).error


def test_detect_groups_what_nvml_sees(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml(watts=[1.0, 1.0], energy_counter=[True, False]))
    facts = detect_rig()
    assert [g.name for g in facts.gpus] == ["NVIDIA GeForce RTX 3090"] * 2
    assert facts.vram_mib_total == 2 * 24576 and not facts.energy_counter and facts.power_source == "nvml"


def test_the_site_line_and_the_commands_read_back() -> None:
    line = site_line("https://rigboard.example.org", "rb_a'b")
    assert parse_site_line(line) == {"url": "https://rigboard.example.org", "token": "rb_a'b"}
    with pytest.raises(ValueError, match="token missing"):
        parse_site_line("url=https://x")
    with pytest.raises(ValueError, match="expected url="):
        parse_site_line("https://x rb_y")
    commands = rig_commands(url="https://x", token="rb_y", rig="my rig", source="./runners")
    assert commands[1] == "rigboard-runner init --url https://x --token rb_y --rig 'my rig'"
    assert commands[2:] == ["rigboard-runner doctor", "rigboard-runner run"]

"""The GGUF header reader against the real Gemma 3 270M file, checked against what
llama-server itself reports and logs for the same file, against llama.cpp's own
Python reader/writer (``gguf``) and ``llama-gguf-split``; plus truncated and
non-GGUF files."""

from __future__ import annotations

import json
import re
import shutil
import struct
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import requests
from gguf import GGUFReader, GGUFWriter, LlamaFileType

from runners.config import AttachConfig, ModelConfig, RigConfig, ServerConfig
from runners.delivery.payload import model_file_payload, model_fingerprint, quantization_from_ftype
from runners.harness.fingerprint import gguf_header, model_file_info
from runners.harness.gguf import LLAMA_FTYPES, GgufError, read_header
from runners.harness.server import AttachedServer, LlamaServer, ServerError, ServerHandle
from tests.fixtures.llama import TEST_THREADS


@pytest.fixture(scope="module")
def verbose_gemma(llama_server_bin: Path, gemma_gguf: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """Yield a llama-server on Gemma logging at verbosity 4, where it prints the
    model's metadata as it loaded it (``print_info: n_layer = 18``)."""
    config = ServerConfig(
        binary=str(llama_server_bin),
        model=str(gemma_gguf),
        ctx_size=512,
        threads=TEST_THREADS,
        parallel=1,
        extra_args=["-lv", "4"],
        startup_timeout_s=120.0,
        stop_grace_s=5.0,
    )
    server = LlamaServer(config, log_dir=tmp_path_factory.mktemp("verbose-gemma")).start()
    try:
        yield server
    finally:
        server.stop()


def print_info(log: str) -> dict[str, str]:
    return {m.group(1): m.group(2).strip() for m in re.finditer(r"print_info: (\w[\w. ]*?)\s+= (.*)", log)}


@pytest.mark.llama
def test_it_reads_gemmas_header_as_llama_server_reports_it(verbose_gemma: LlamaServer, gemma_gguf: Path) -> None:
    header = read_header(gemma_gguf)
    assert verbose_gemma.gguf == header  # read by the launch itself, before the server started
    meta = requests.get(f"{verbose_gemma.base_url}/v1/models", timeout=10).json()["data"][0]["meta"]
    assert header.total_params == meta["n_params"]
    assert header.context_length == meta["n_ctx_train"]
    assert header.embedding_length == meta["n_embd"]
    assert header.quantization == quantization_from_ftype(meta["ftype"])
    info = print_info(verbose_gemma.log_tail(lines=400))
    assert header.architecture == info["arch"]
    assert header.block_count == int(info["n_layer"])
    assert (header.expert_count or 0) == int(info["n_expert"]) and (header.expert_used_count or 0) == int(
        info["n_expert_used"]
    )
    assert header.name == info["general.name"]
    assert header.kind == "dense" and header.active_params == header.total_params
    props = requests.get(f"{verbose_gemma.base_url}/props", timeout=10).json()
    assert Path(props["model_path"]) == gemma_gguf


@pytest.mark.llama
def test_attach_mode_reads_the_header_of_the_model_llama_server_names(
    verbose_gemma: LlamaServer, gemma_gguf: Path
) -> None:
    attached = AttachedServer(AttachConfig(url=verbose_gemma.base_url)).start()
    assert attached.model_path == str(gemma_gguf) and attached.gguf == read_header(gemma_gguf)
    config = RigConfig.from_mapping({"attach": {"url": verbose_gemma.base_url}})
    fingerprint = model_fingerprint({"model": {}}, attached)
    assert fingerprint["model"] == {"file_name": gemma_gguf.name, "gguf": attached.gguf.as_dict()}
    posted = model_file_payload(config, attached, fingerprint)
    assert posted["name"] == gemma_gguf.stem and posted["architecture"] == "dense"
    assert posted["layers"] == attached.gguf.block_count and posted["quantization"] == "Q4_K_M"
    assert posted["total_params_b"] == round(attached.gguf.total_params / 1e9, 3)
    assert posted["experts_total"] is None and posted["active_params_b"] is None


def test_it_agrees_with_llama_cpps_own_reader_on_gemma(gemma_gguf: Path) -> None:
    reader = GGUFReader(gemma_gguf)
    fields = {name: field.contents() for name, field in reader.fields.items() if not name.startswith("tokenizer.")}
    header = read_header(gemma_gguf)
    arch = fields["general.architecture"]
    assert header.architecture == arch and header.name == fields["general.name"]
    assert header.size_label == fields["general.size_label"] and header.file_type == fields["general.file_type"]
    assert header.block_count == fields[f"{arch}.block_count"]
    assert header.context_length == fields[f"{arch}.context_length"]
    assert header.embedding_length == fields[f"{arch}.embedding_length"]
    assert header.tensor_count == len(reader.tensors) and header.kv_count == len(reader.fields) - 3
    assert header.total_params == sum(int(t.n_elements) for t in reader.tensors)


def test_its_quantization_names_are_llama_cpps_ftype_names() -> None:
    for ftype in LlamaFileType:
        if ftype is not LlamaFileType.GUESSED:
            assert LLAMA_FTYPES[int(ftype)] == ftype.name.removeprefix("MOSTLY_").removeprefix("ALL_")


def test_a_split_model_counts_the_parameters_of_every_shard(
    llama_server_bin: Path, gemma_gguf: Path, tmp_path: Path
) -> None:
    split = llama_server_bin.with_name("llama-gguf-split")
    done = subprocess.run(
        [str(split), "--split-max-tensors", "100", str(gemma_gguf), str(tmp_path / "gemma")],
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    shards = sorted(tmp_path.glob("gemma-*-of-*.gguf"))
    assert len(shards) == 3  # 236 tensors, 100 a shard
    first = read_header(shards[0])
    whole = read_header(gemma_gguf)
    assert first.split_count == 3 and first.tensor_count < whole.tensor_count
    assert first.total_params == whole.total_params and first.block_count == whole.block_count
    # Without every shard beside it, the count is unknown rather than a third of the truth.
    shards[2].unlink()
    assert read_header(shards[0]).total_params is None


def write_moe(path: Path, *, experts: int = 8, used: int = 2, layers: int = 2) -> dict[str, int]:
    """Write a small MoE GGUF with llama.cpp's own writer; return its tensors' sizes."""
    writer = GGUFWriter(path, "qwen3moe")
    writer.add_name("Tiny MoE")
    writer.add_block_count(layers)
    writer.add_context_length(4096)
    writer.add_embedding_length(64)
    writer.add_expert_count(experts)
    writer.add_expert_used_count(used)
    writer.add_file_type(int(LlamaFileType.MOSTLY_Q8_0))
    tensors = {"token_embd.weight": np.zeros((100, 64), dtype=np.float32)}
    for blk in range(layers):
        tensors[f"blk.{blk}.attn_q.weight"] = np.zeros((64, 64), dtype=np.float32)
        tensors[f"blk.{blk}.ffn_gate_inp.weight"] = np.zeros((experts, 64), dtype=np.float32)
        for part in ("gate", "up", "down"):
            tensors[f"blk.{blk}.ffn_{part}_exps.weight"] = np.zeros((experts, 32, 64), dtype=np.float32)
            tensors[f"blk.{blk}.ffn_{part}_shexp.weight"] = np.zeros((32, 64), dtype=np.float32)
    for name, data in tensors.items():
        writer.add_tensor(name, data)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return {name: int(data.size) for name, data in tensors.items()}


def test_a_moe_file_gives_its_experts_and_the_parameters_one_token_uses(tmp_path: Path) -> None:
    sizes = write_moe(tmp_path / "moe.gguf", experts=8, used=2)
    header = read_header(tmp_path / "moe.gguf")
    routed = sum(n for name, n in sizes.items() if "_exps." in name)
    assert (header.expert_count, header.expert_used_count, header.block_count) == (8, 2, 2)
    assert header.kind == "moe" and header.quantization == "Q8_0"
    assert header.total_params == sum(sizes.values()) and header.expert_params == routed
    assert header.active_params == sum(sizes.values()) - routed + routed * 2 // 8


def _config(**model: Any) -> RigConfig:
    return RigConfig.from_mapping({"server": {"model": "/models/x.gguf"}, "model": model})


def test_the_posted_model_file_is_filled_from_the_header_and_the_config_wins(tmp_path: Path) -> None:
    write_moe(tmp_path / "moe.gguf")
    fingerprint = {"model": model_file_info(tmp_path / "moe.gguf", cache_dir=tmp_path / "cache")}
    header = fingerprint["model"]["gguf"]
    filled = model_file_payload(_config(), ServerHandle("http://x"), fingerprint)
    assert filled["architecture"] == "moe" and filled["layers"] == 2
    assert (filled["experts_total"], filled["experts_active"]) == (8, 2)
    assert filled["total_params_b"] == round(header["total_params"] / 1e9, 3)
    assert filled["active_params_b"] == round(header["active_params"] / 1e9, 3)
    assert filled["quantization"] == "Q8_0" and filled["weight_format"] == "GGUF"
    assert filled["sha256"] == fingerprint["model"]["sha256"]

    given = ModelConfig(
        architecture="hybrid", layers=48, experts_total=128, experts_active=8, quantization="UD-Q3_K_XL"
    )
    config = _config(**{k: v for k, v in vars(given).items() if v not in (None, "")})
    chosen = model_file_payload(config, ServerHandle("http://x"), fingerprint)
    assert (chosen["architecture"], chosen["layers"], chosen["experts_total"], chosen["experts_active"]) == (
        "hybrid",
        48,
        128,
        8,
    )
    assert chosen["quantization"] == "UD-Q3_K_XL"


def test_the_header_is_cached_by_path_size_and_mtime(gemma_gguf: Path, tmp_path: Path) -> None:
    model = tmp_path / "gemma.gguf"
    shutil.copyfile(gemma_gguf, model)
    assert gemma_header_of(model, tmp_path) == read_header(model)
    cache_file = tmp_path / "cache" / "gguf-cache-v2.json"
    cache = json.loads(cache_file.read_text())
    (key,) = cache
    cache[key]["block_count"] = 99  # planted: the cache answers while the file is unchanged
    cache_file.write_text(json.dumps(cache))
    assert gemma_header_of(model, tmp_path).block_count == 99
    with model.open("r+b") as handle:  # a changed file (same size, new mtime) is read again
        handle.write(b"GGUF")
    assert gemma_header_of(model, tmp_path).block_count == read_header(model).block_count


def gemma_header_of(model: Path, tmp_path: Path) -> Any:
    return gguf_header(model, cache_dir=tmp_path / "cache")


def test_a_truncated_file_is_an_error_naming_the_file(gemma_gguf: Path, tmp_path: Path) -> None:
    data = gemma_gguf.read_bytes()
    # A download cut in the tensor data, one cut inside the vocabulary, one inside the first bytes.
    for cut in (len(data) // 2, 4096, 10):
        short = tmp_path / f"cut-{cut}.gguf"
        short.write_bytes(data[:cut])
        with pytest.raises(GgufError) as error:
            read_header(short)
        assert error.value.kind == "truncated" and str(short) in str(error.value), str(error.value)
    info = model_file_info(tmp_path / "cut-10.gguf", cache_dir=tmp_path / "cache")
    assert info["gguf_error"].startswith("cut-10.gguf: truncated") and "gguf" not in info


def test_a_file_that_is_not_gguf_is_an_error_naming_the_file(tmp_path: Path) -> None:
    cases = {
        "model.safetensors": struct.pack("<Q", 2) + b"{}" + b"\0" * 64,
        "notes.gguf": b"this is not a model\n" * 10,
        "empty.gguf": b"",
    }
    for name, content in cases.items():
        (tmp_path / name).write_bytes(content)
        with pytest.raises(GgufError) as error:
            read_header(tmp_path / name)
        assert error.value.kind == "not_gguf" and str(tmp_path / name) in str(error.value)
    future = tmp_path / "future.gguf"
    future.write_bytes(b"GGUF" + struct.pack("<I", 4) + b"\0" * 32)
    with pytest.raises(GgufError, match="version 4 is not supported") as error:
        read_header(future)
    assert error.value.kind == "unsupported"
    # A non-GGUF file named otherwise is not read as one in the fingerprint.
    assert "gguf_error" not in model_file_info(tmp_path / "model.safetensors", cache_dir=tmp_path / "cache")


def test_launching_a_model_file_that_is_not_gguf_fails_before_the_server_starts(
    llama_server_bin: Path, tmp_path: Path
) -> None:
    model = tmp_path / "model.gguf"
    model.write_bytes(b"<html>404 Not Found</html>" * 4)  # what a failed download often leaves
    server = LlamaServer(ServerConfig(binary=str(llama_server_bin), model=str(model)), log_dir=tmp_path)
    with pytest.raises(ServerError) as error:
        server.start()
    assert error.value.kind == "bad_model" and str(model) in error.value.reason
    assert server.process is None

"""Bytes per token from a GGUF file's tensor table, against llama.cpp's own reader
(``gguf``: each tensor's n_bytes, read plainly here), with the placement rules of
-ngl, --n-cpu-moe and -ot; the bound's arithmetic; the OS's memory records."""

from __future__ import annotations

from pathlib import Path

import pytest
from gguf import GGUFReader

from runners.bandwidth.bound import Memory, decode_bound, system_bandwidth_gb_s
from runners.bandwidth.offload import Offload, offload_from
from runners.bandwidth.weights import ModelFacts, header_weights, kv_bytes_per_token, nominal_bits, token_read
from runners.harness.gguf import read_header
from runners.harness.memory import parse_dmidecode
from tests.runners.test_gguf import write_moe

NO_MODEL = ModelFacts(None, None, "")


def tensor_bytes(path: Path) -> dict[str, int]:
    return {tensor.name: int(tensor.n_bytes) for tensor in GGUFReader(path).tensors}


def test_gemmas_bytes_per_token_are_its_tensors_with_the_tied_embedding_read_by_the_lm_head(gemma_gguf: Path) -> None:
    sizes = tensor_bytes(gemma_gguf)
    # Gemma 3 ties its output projection to the token embedding: the LM head reads all of it.
    assert "output.weight" not in sizes and "token_embd.weight" in sizes
    header = read_header(gemma_gguf).as_dict()
    assert header["tensor_bytes"] == sum(sizes.values())
    gpu, cpu = header_weights(header, Offload())
    assert (gpu, cpu) == (sum(sizes.values()), 0)
    assert header_weights(header, Offload(cpu_only=True)) == (0, sum(sizes.values()))


def test_an_ngl_split_keeps_the_first_blocks_and_the_embedding_in_system_memory(gemma_gguf: Path) -> None:
    sizes = tensor_bytes(gemma_gguf)
    header = read_header(gemma_gguf).as_dict()
    blocks = header["block_count"]
    on_gpu = sum(n for name, n in sizes.items() if name.startswith("blk.") and int(name.split(".")[1]) >= blocks - 9)
    gpu, cpu = header_weights(header, offload_from(n_gpu_layers=9))
    assert gpu == on_gpu and cpu == sum(sizes.values()) - on_gpu


def test_gemmas_kv_cache_read_follows_its_attention_shape(gemma_gguf: Path) -> None:
    reader = GGUFReader(gemma_gguf)
    fields = {name: field.contents() for name, field in reader.fields.items() if not name.startswith("tokenizer.")}
    layers, n_kv = fields["gemma3.block_count"], fields["gemma3.attention.head_count_kv"]
    key, value = fields["gemma3.attention.key_length"], fields["gemma3.attention.value_length"]
    window = fields["gemma3.attention.sliding_window"]
    header = read_header(gemma_gguf).as_dict()
    for depth in (100, 5000):
        expected = layers * n_kv * (key + value) * 2 * min(depth, window)  # f16: 2 bytes a value
        assert kv_bytes_per_token(header, depth_tokens=depth, cache_k="", cache_v="") == expected
    q8 = kv_bytes_per_token(header, depth_tokens=100, cache_k="q8_0", cache_v="q8_0")
    assert q8 == pytest.approx(layers * n_kv * (key + value) * 100 * 34 / 32)


def test_a_moe_token_reads_its_used_share_of_the_experts(tmp_path: Path) -> None:
    write_moe(tmp_path / "moe.gguf", experts=8, used=2, layers=2)
    sizes = tensor_bytes(tmp_path / "moe.gguf")
    header = read_header(tmp_path / "moe.gguf").as_dict()
    experts = sum(n for name, n in sizes.items() if "_exps." in name)
    rest = sum(sizes.values()) - experts
    assert header_weights(header, Offload()) == (rest + experts * 2 / 8, 0)
    # --n-cpu-moe 1: block 0's experts in system memory, the rest on the GPU.
    blk0 = sum(n for name, n in sizes.items() if name.startswith("blk.0.") and "_exps." in name)
    gpu, cpu = header_weights(header, offload_from(n_gpu_layers=99, command_line="llama-server --n-cpu-moe 1"))
    assert cpu == blk0 * 2 / 8 and gpu == rest + (experts - blk0) * 2 / 8
    # The same by an -ot pattern, as seed 000 offloads its experts.
    by_pattern = offload_from(n_gpu_layers=99, tensor_overrides=r"blk\.0\.ffn_.*_exps=CPU")
    assert header_weights(header, by_pattern) == (gpu, cpu)


def test_without_a_header_the_bytes_are_active_parameters_times_bits() -> None:
    facts = ModelFacts(total_params_b=35, active_params_b=3, quantization="UD-Q3_K_XL", file_size_bytes=17_200_000_000)
    read = token_read(header=None, model=facts, offload=Offload(), depth_tokens=None)
    assert not isinstance(read, str)
    assert read.total_bytes == pytest.approx(17.2e9 * 3 / 35)  # the file's own bits per weight
    nominal = token_read(header=None, model=ModelFacts(8, None, "Q4_K_M"), offload=Offload(), depth_tokens=None)
    assert not isinstance(nominal, str) and nominal.total_bytes == pytest.approx(8e9 * 4.5 / 8)
    assert nominal_bits("IQ3_S") == 110 * 8 / 256 and nominal_bits("no such quant") is None
    assert isinstance(
        token_read(header=None, model=ModelFacts(8, None, "?"), offload=Offload(), depth_tokens=None), str
    )


def test_each_memory_is_read_at_its_speed_and_the_times_add() -> None:
    read = token_read(
        header=None,
        model=ModelFacts(10, None, "Q8_0", layers=10),
        offload=offload_from(n_gpu_layers=4),
        depth_tokens=None,
    )
    assert not isinstance(read, str)
    gpu, ddr = Memory("RTX 3090", 936), Memory("DDR5-5200", system_bandwidth_gb_s(channels=2, mt_s=5200))
    bound = decode_bound(read, gpu=gpu, cpu=ddr)
    assert not isinstance(bound, str)
    total = 10e9 * 8.5 / 8
    assert bound.tokens_per_s == pytest.approx(1 / (0.4 * total / 936e9 + 0.6 * total / 83.2e9))
    assert (
        decode_bound(read, gpu=gpu, cpu=None) == "the system memory's bandwidth is not stated (its channels and speed)"
    )


DMIDECODE = """# dmidecode 3.4
Handle 0x0040, DMI type 17, 92 bytes
Memory Device
\tSize: 48 GB
\tLocator: DIMM_A1
\tType: DDR5
\tSpeed: 5600 MT/s
\tConfigured Memory Speed: 5200 MT/s

Handle 0x0041, DMI type 17, 92 bytes
Memory Device
\tSize: No Module Installed
\tType: Unknown

Handle 0x0042, DMI type 17, 92 bytes
Memory Device
\tSize: 48 GB
\tType: DDR5
\tConfigured Memory Speed: 5200 MT/s
"""


def test_the_os_memory_records_give_type_and_configured_speed() -> None:
    assert parse_dmidecode(DMIDECODE) == {"modules": 2, "size_gb": 96, "type": "DDR5", "speed_mt_s": 5200}
    assert parse_dmidecode("Memory Device\n\tSize: No Module Installed\n") == {}


def test_a_command_line_is_read_as_a_shell_reads_it_and_an_open_quote_word_by_word() -> None:
    quoted = offload_from(n_gpu_layers=None, command_line="llama-server --alias 'my model' -ngl 0")
    assert quoted == Offload(cpu_only=True)
    # An unclosed quote: shlex refuses it, the words are split on blanks (twice: the cache
    # keeps the answer, not the refusal).
    for _ in range(2):
        assert offload_from(n_gpu_layers=None, command_line="llama-server --alias 'mine -ngl 0") == Offload(
            cpu_only=True
        )
    assert offload_from(n_gpu_layers=None, command_line="llama-server -ngl 99").n_gpu_layers == 99

"""The rig config: the command line it builds and the errors that name the bad field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from runners.config import ConfigError, RigConfig, ServerConfig, read_spec

EXAMPLE = Path(__file__).resolve().parents[2] / "runners" / "examples" / "rig.toml"


def test_it_builds_the_seed_004_command_line() -> None:
    config = ServerConfig(
        binary="llama-server",
        model="/models/Qwen3.6-35B-A3B-MTP-UD-Q3_K_XL.gguf",
        ctx_size=32768,
        cache_type_k="q4_0",
        cache_type_v="q4_0",
        batch_size=512,
        ubatch_size=512,
        parallel=1,
        flash_attn="on",
        spec_type="draft-mtp",
        draft_n_max=3,
        tensor_overrides=["blk\\.(1[0-9])\\.ffn_.*=CPU"],
    )
    argv = config.argv(port=8080)
    text = " ".join(argv)
    assert argv[:2] == ["llama-server", "--model"]
    assert "--spec-type draft-mtp --spec-draft-n-max 3" in text
    assert "--ctx-size 32768 --n-gpu-layers" not in text  # unset flags are left out
    assert "--cache-type-k q4_0 --cache-type-v q4_0 --batch-size 512 --ubatch-size 512" in text
    assert "--parallel 1 --flash-attn on" in text
    assert argv[argv.index("-ot") + 1] == "blk\\.(1[0-9])\\.ffn_.*=CPU"
    assert json.loads(argv[argv.index("--chat-template-kwargs") + 1]) == {"enable_thinking": False}
    assert config.speculative_type() == "mtp"


@pytest.mark.parametrize(
    ("spec_type", "expected"),
    [("draft-simple", "draft"), ("ngram-mod", "ngram"), ("draft-dflash", "dflash"), ("none", "none")],
)
def test_it_maps_spec_types_to_the_services_choices(spec_type: str, expected: str) -> None:
    assert ServerConfig(model="m", spec_type=spec_type).speculative_type() == expected


@pytest.mark.parametrize(
    ("data", "field", "reason"),
    [
        ({"server": {"model": "m.gguf", "ctx_size": "big"}}, "server.ctx_size", "expected an integer"),
        ({"server": {"model": "m.gguf", "ctx": 4096}}, "server.ctx", "unknown field"),
        ({"server": {}}, "server.model", "required"),
        ({}, "server", "exactly one of"),
        ({"server": {"model": "m"}, "attach": {"url": "http://x"}}, "server", "exactly one of"),
        ({"attach": {"url": "localhost:8080"}}, "attach.url", "http(s) URL"),
        ({"server": {"model": "m", "spec_type": "draft-simple"}}, "server.draft_model", "required"),
        ({"server": {"model": "m"}, "workload": {"repetitions": 0}}, "workload.repetitions", "at least 1"),
        ({"server": {"model": "m"}, "sweep": {"depths": [4096, "8K"]}}, "sweep.depths.1", "expected an integer"),
        ({"server": {"model": "m"}, "workload": {"thinking": "no"}}, "workload.thinking", "true or false"),
        ({"attach": {"url": "http://x", "engine": "llamacpp"}}, "attach.engine", "openai (generic) or one of"),
        ({"server": {"model": "m"}, "model": {"layers": 4.5}}, "model.layers", "expected an integer"),
        # The service's speculative_type names are not llama-server's --spec-type values.
        ({"server": {"model": "m", "spec_type": "mtp"}}, "server.spec_type", "llama-server's draft-mtp"),
        ({"server": {"model": "m", "spec_type": "eagle"}}, "server.spec_type", "llama-server's draft-eagle3"),
        ({"server": {"model": "m", "spec_type": "ngram-mod,medusa"}}, "server.spec_type", "'medusa' is not a"),
    ],
)
def test_it_names_the_bad_field(data: dict, field: str, reason: str) -> None:
    with pytest.raises(ConfigError) as caught:
        RigConfig.from_mapping(data)
    assert caught.value.field == field
    assert reason in caught.value.reason


@pytest.mark.parametrize("spec_type", ["draft-mtp", "ngram-mod,draft-simple", "ngram-map-k4v", "none", ""])
def test_it_takes_every_spec_type_llama_server_takes(spec_type: str) -> None:
    data = {"server": {"model": "m", "spec_type": spec_type, "draft_model": "d"}}
    assert RigConfig.from_mapping(data).server is not None


def test_it_loads_the_example_config() -> None:
    config = RigConfig.from_mapping(read_spec(EXAMPLE))  # what the CLI does with --config
    assert config.server is not None
    assert config.server.spec_type == "draft-mtp"
    assert config.workload.max_tokens == 2000
    assert config.workload.repetitions == 10
    assert config.sweep.depths[:2] == [4096, 8192]


def test_it_reports_a_toml_syntax_error_with_the_file_name(tmp_path: Path) -> None:
    bad = tmp_path / "rig.toml"
    bad.write_text("[server\nmodel = 1")
    with pytest.raises(ConfigError) as caught:
        read_spec(bad)
    assert caught.value.field == str(bad)
    assert "not valid TOML" in caught.value.reason


def test_it_reports_a_missing_config_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read the config file"):
        read_spec(tmp_path / "nope.toml")

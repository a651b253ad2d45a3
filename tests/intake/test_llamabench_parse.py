"""runners.llamabench: llama-bench's real output files → run payloads, and the files it refuses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from runners import llamabench
from runners.llamabench import LlamaBenchError

FILES = Path(__file__).resolve().parents[1] / "fixtures" / "llama_bench"


def read(fmt: str) -> str:
    return (FILES / f"gemma-cpu.{fmt}").read_text()


def json_rows() -> list[dict]:
    return json.loads(read("json"))


def errors_of(text: str, **kwargs) -> dict[str, list[str]]:
    with pytest.raises(LlamaBenchError) as caught:
        llamabench.parse(text, **kwargs)
    return caught.value.errors


@pytest.mark.parametrize("fmt", ["json", "jsonl", "csv"])
def test_it_reads_every_format_with_one_workload_per_test_and_depth(fmt):
    rows = llamabench.parse(read(fmt))
    assert llamabench.detect_format(read(fmt)) == fmt
    assert [r.workload_name for r in rows] == [
        "llama-bench pp32 @ d0",
        "llama-bench tg8 @ d0",
        "llama-bench pp32 @ d64",
        "llama-bench tg8 @ d64",
    ]


def test_a_pp_row_has_prefill_samples_and_a_tg_row_decode_samples():
    raw = json_rows()
    pp, tg = llamabench.row_payloads(llamabench.parse(read("json"))[:2], rig="r")
    assert [s["prefill_tokens_per_s"] for s in pp["samples"]] == raw[0]["samples_ts"]
    assert all("decode_tokens_per_s_server" not in s for s in pp["samples"])
    assert [s["decode_tokens_per_s_server"] for s in tg["samples"]] == raw[1]["samples_ts"]
    assert tg["extra"]["llama_bench"]["samples_ns"] == raw[1]["samples_ns"]
    assert tg["workload"] == {"name": "llama-bench tg8 @ d0", "version": "1", "max_tokens": 8, "repetitions": 2}


def test_it_maps_the_flags_and_keeps_the_others_verbatim():
    raw = json_rows()[3]
    payload = llamabench.row_payload(llamabench.parse(read("json"))[3], rig="r")
    config = payload["configuration"]
    assert config["threads"] == raw["n_threads"]
    assert config["batch_size"] == raw["n_batch"]
    assert config["ubatch_size"] == raw["n_ubatch"]
    assert config["n_gpu_layers"] == raw["n_gpu_layers"]
    assert config["cache_type_k"] == raw["type_k"]
    assert config["flash_attn"] in ("auto", "on", "off")
    assert config["ctx_size"] is None  # the test and depth are the workload's
    assert f"split_mode={raw['split_mode']}" in config["extra_args"]
    assert payload["model_file"] == {
        "name": "gemma-3-270m-q4_k_m.gguf",
        "quantization": "Q4_K_M",
        "weight_format": "GGUF",
        "file_size_bytes": raw["model_size"],
        "total_params_b": round(raw["model_n_params"] / 1e9, 3),
    }
    assert payload["stack"]["build"] == f"b{raw['build_number']}-{raw['build_commit']}"
    assert payload["fingerprint"]["cpu"] == raw["cpu_info"]


def test_json_and_csv_of_one_setup_give_one_configuration():
    from_json = [llamabench.row_payload(r, rig="r")["configuration"] for r in llamabench.parse(read("json"))]
    from_csv = [llamabench.row_payload(r, rig="r")["configuration"] for r in llamabench.parse(read("csv"))]
    assert from_json == from_csv


def test_csv_rows_have_one_flagged_sample_the_mean():
    rows = llamabench.parse(read("csv"))
    payload = llamabench.row_payload(rows[1], rig="r")
    assert len(payload["samples"]) == 1
    assert payload["samples"][0]["flags"]
    assert payload["workload"]["repetitions"] is None


def test_the_same_row_gets_the_same_uuid_and_another_rig_another():
    row = llamabench.parse(read("json"))[0]
    assert llamabench.row_payload(row, rig="a")["uuid"] == llamabench.row_payload(row, rig="a")["uuid"]
    assert llamabench.row_payload(row, rig="a")["uuid"] != llamabench.row_payload(row, rig="b")["uuid"]


def test_it_refuses_text_that_is_not_llama_bench_output():
    assert "file" in errors_of("<html><body>hello</body></html>")
    assert "file" in errors_of('{"model": "x"}\n')  # JSON, but not a test row
    assert "file" in errors_of("[1, 2")


def test_it_names_the_row_and_the_field_missing():
    rows = json_rows()
    del rows[2]["samples_ts"]
    del rows[3]["model_type"]
    errors = errors_of(json.dumps(rows))
    assert set(errors) == {"rows.2.samples_ts", "rows.3.model_type"}


def test_it_refuses_samples_that_disagree_with_their_own_average():
    rows = json_rows()
    rows[1]["samples_ts"] = [s * 2 for s in rows[1]["samples_ts"]]
    errors = errors_of(json.dumps(rows))
    assert list(errors) == ["rows.1.avg_ts"]
    assert "disagrees" in errors["rows.1.avg_ts"][0]


def test_it_refuses_samples_ns_of_another_length():
    rows = json_rows()
    rows[0]["samples_ns"] = rows[0]["samples_ns"][:1]
    assert list(errors_of(json.dumps(rows))) == ["rows.0.samples_ns"]


def test_it_refuses_html_in_a_model_string():
    rows = json_rows()
    rows[0]["model_type"] = "gemma3 <script>alert(1)</script>"
    assert list(errors_of(json.dumps(rows))) == ["rows.0.model_type"]


def test_it_refuses_more_rows_than_the_limit():
    rows = json_rows()
    big = [rows[i % 4] for i in range(10_000)]
    errors = errors_of(json.dumps(big))
    assert "10000 rows" in errors["file"][0]


def test_it_refuses_a_combined_prompt_and_generation_test():
    rows = json_rows()
    rows[0]["n_gen"] = 8
    assert list(errors_of(json.dumps(rows))) == ["rows.0.n_gen"]


def test_it_refuses_a_wrong_type():
    rows = json_rows()
    rows[0]["n_prompt"] = "32"
    rows[1]["samples_ts"] = ["fast"]
    assert set(errors_of(json.dumps(rows))) == {"rows.0.n_prompt", "rows.1.samples_ts.0"}

"""runners.llamabench.markdown: llama-bench's Markdown table (real pastes) → rows without samples."""

from __future__ import annotations

from pathlib import Path

import pytest

from runners.llamabench import LlamaBenchError, markdown

FILES = Path(__file__).resolve().parents[1] / "fixtures" / "llama_bench_md"


def read(name: str) -> str:
    return (FILES / name).read_text()


def errors_of(text: str, **kwargs) -> dict[str, list[str]]:
    with pytest.raises(LlamaBenchError) as caught:
        markdown.parse_markdown(text, **kwargs)
    return caught.value.errors


def printed_figures(text: str) -> list[tuple[int, float, float]]:
    """An oracle beside the parser: every line whose last cell reads 'mean ± sd', as (line, mean, sd)."""
    found = []
    for number, line in enumerate(text.splitlines(), start=1):
        last = line.strip().strip("|").split("|")[-1].strip()
        if line.lstrip().startswith("|") and "±" in last:
            mean, sd = (float(part) for part in last.split("±"))
            found.append((number, mean, sd))
    return found


def test_it_reads_the_issue_table_as_one_printed_summary():
    (row,) = markdown.parse_markdown(read("issue-27-example.md"))
    raw = row.bench.raw
    assert (row.line, row.mean_ts, row.stddev_ts) == (3, 5587.84, 12.06)
    assert row.bench.workload_name == "llama-bench pp512 @ d0"
    assert (raw["build_commit"], raw["build_number"]) == ("e9fd8dc", 7825)
    assert raw["backends"] == "Metal,BLAS" and raw["n_threads"] == 16
    assert row.bench.samples_ts == () and row.bench.mean_only
    assert row.printed == {"model_size_printed": "636.18 MiB", "model_n_params_printed": "1.10 B"}
    assert raw["model_size"] == round(636.18 * 2**20)
    payload = markdown.summary_payload(row, rig="r")
    assert payload["samples"] == []
    assert payload["workload"]["repetitions"] is None
    assert payload["stack"]["build"] == "b7825-e9fd8dc"
    assert payload["configuration"]["threads"] == 16
    summary = payload["extra"]["llama_bench"]["summary"]
    assert summary == {
        "mean_ts": 5587.84,
        "stddev_ts": 12.06,
        "n": None,
        "n_label": "not stated",
        "source": "llama-bench -o md: mean ± SD as printed, no samples",
    }
    assert markdown.summary_payload(row, rig="r", repetitions=5)["extra"]["llama_bench"]["summary"]["n_label"] == "5"


@pytest.mark.parametrize(
    "name", ["issue-27-example.md", "pr-4812-nkvo.md", "two-pastes-13326-14001.md", "depths-mistral3-metal.md"]
)
def test_every_printed_figure_of_a_real_paste_is_read_on_its_line(name):
    text = read(name)
    assert markdown.looks_like_markdown(text)
    rows = markdown.parse_markdown(text)
    expected = printed_figures(text)
    assert len(expected) >= 1
    assert [(r.line, r.mean_ts, r.stddev_ts) for r in rows] == expected


def test_each_table_of_a_paste_takes_the_build_line_after_it():
    rows = markdown.parse_markdown(read("two-pastes-13326-14001.md"))
    builds = [(r.bench.raw["build_commit"], r.bench.raw["build_number"]) for r in rows]
    assert builds == [("8c83449c", 5315)] * 4 + [("a0dd7795", 5589)] * 2
    assert [r.bench.raw["backends"] for r in rows] == ["RPC,Vulkan"] * 4 + ["Vulkan"] * 2
    assert {r.bench.raw["model_type"] for r in rows[4:]} == {"gemma2 2B Q4_K - Medium"}


def test_an_old_table_with_spaced_tests_and_an_nkvo_column():
    rows = markdown.parse_markdown(read("pr-4812-nkvo.md"))
    assert [r.bench.workload_name for r in rows] == ["llama-bench pp512 @ d0", "llama-bench tg128 @ d0"] * 2
    payloads = markdown.summary_payloads(rows, rig="r")
    # nkvo is kept as the JSON output names it, in the configuration's extra_args.
    assert [p["configuration"]["extra_args"] for p in payloads] == [["no_kv_offload=0"]] * 2 + [["no_kv_offload=1"]] * 2
    assert payloads[0]["configuration"]["n_gpu_layers"] == 99
    # Two flag values, two configurations: the rows are four distinct runs.
    assert len({p["uuid"] for p in payloads}) == 4


def test_depths_and_flash_attention_are_read():
    rows = markdown.parse_markdown(read("depths-mistral3-metal.md"))
    assert {r.bench.n_depth for r in rows} == {0, 4096, 8192, 16384}
    assert rows[2].bench.workload_name == "llama-bench pp512 @ d4096"
    payload = markdown.summary_payload(rows[3], rig="r")
    assert payload["workload"]["name"] == "llama-bench tg128 @ d4096"
    assert payload["workload"]["max_tokens"] == 128
    assert payload["configuration"]["flash_attn"] == "on"
    assert payload["model_file"]["quantization"] == "Q4_K_M"


def test_a_build_line_before_the_table_dates_it():
    text = read("geerling-issue-20-with-pg.md")
    without_pg = "\n".join(line for line in text.splitlines() if "+tg128" not in line)
    rows = markdown.parse_markdown(without_pg)
    assert {(r.bench.raw["build_commit"], r.build_stated) for r in rows} == {("e598697d", True)}


def test_a_combined_pg_row_is_refused_naming_its_line():
    errors = errors_of(read("geerling-issue-20-with-pg.md"))
    assert list(errors) == ["line.13.test"]
    assert "-pg" in errors["line.13.test"][0]


def test_a_table_without_a_build_line_says_so():
    text = "\n".join(read("issue-27-example.md").splitlines()[:3])
    (row,) = markdown.parse_markdown(text)
    payload = markdown.summary_payload(row, rig="r")
    assert not row.build_stated
    assert payload["stack"]["build"] == "" and payload["fingerprint"]["build"] == "not stated"


@pytest.mark.parametrize(
    ("mutate", "where"),
    [
        (lambda lines: lines.__setitem__(2, lines[2].replace("| pp512 |", "| pp512 | 7 |")), "line.3"),
        (lambda lines: lines.__setitem__(2, lines[2].replace("5587.84 ± 12.06", "fast")), "line.3.t/s"),
        (lambda lines: lines.__setitem__(2, lines[2].replace("| pp512 |", "| warmup |")), "line.3.test"),
        (lambda lines: lines.__setitem__(2, lines[2].replace("636.18 MiB", "big")), "line.3.size"),
        (lambda lines: lines.__setitem__(2, lines[2].replace("llama 1B", "<b>llama</b>")), "line.3.model"),
        (lambda lines: lines.__setitem__(0, lines[0].replace("|  test |", "|  name |")), "line.1"),
    ],
)
def test_a_malformed_table_is_refused_naming_the_line(mutate, where):
    lines = read("issue-27-example.md").splitlines()
    mutate(lines)
    errors = errors_of("\n".join(lines))
    assert where in errors, errors


def test_text_without_a_table_is_refused_and_over_many_rows_too():
    assert "file" in errors_of("build: e9fd8dc (7825)\nno table here")
    assert "file" in errors_of(read("depths-mistral3-metal.md"), max_rows=10)
    assert not markdown.looks_like_markdown('[{"build_commit": "x"}]')

"""Malformed llama-bench files (issue 22's reproducers, found by fuzzing): every one is
refused naming the row (or line) and the field, by the reader and by the import API,
never an exception deeper in (a 500)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from leaderboard.results.models import Run
from runners import llamabench
from runners.llamabench import LlamaBenchError
from runners.llamabench.row import LlamaBenchRow, checked_rows

FILES = Path(__file__).resolve().parents[1] / "fixtures" / "llama_bench"


def read(fmt: str) -> str:
    return (FILES / f"gemma-cpu.{fmt}").read_text()


def json_rows() -> list[dict]:
    return json.loads(read("json"))


def errors_of(text: str) -> dict[str, list[str]]:
    with pytest.raises(LlamaBenchError) as caught:
        llamabench.parse(text)
    return caught.value.errors


def with_row(field: str, value) -> str:
    rows = json_rows()
    rows[1][field] = value
    return json.dumps(rows)


def csv_with_samples(samples: str) -> str:
    """Return the CSV fixture with a samples_ts column (newer llama-bench prints one), ``samples`` in every row."""
    lines = read("csv").splitlines()
    return "\n".join([lines[0] + ',"samples_ts"', *(line + f',"{samples}"' for line in lines[1:])]) + "\n"


def csv_cell(column: str, value: str, *, row: int = 0) -> str:
    """Return the CSV fixture with ``column`` of data row ``row`` set to ``value``."""
    lines = read("csv").splitlines()
    header = lines[0].split(",")
    cells = lines[row + 1].split(",")
    cells[header.index(column)] = f'"{value}"'
    lines[row + 1] = ",".join(cells)
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize(
    ("field", "value", "path"),
    [
        ("flash_attn", [1], "rows.1.flash_attn"),
        ("flash_attn", {}, "rows.1.flash_attn"),
        ("n_depth", 1e30, "rows.1.n_depth"),
        ("n_prompt", 10**40, "rows.1.n_prompt"),
        ("samples_ts", "abc", "rows.1.samples_ts"),
        ("samples_ts", [1e308, 1e308], "rows.1.samples_ts.0"),
        ("avg_ts", -1, "rows.1.avg_ts"),
        ("cpu_info", "AMD\ud800", "rows.1.cpu_info"),
        ("cpu_info", "AMD\x00", "rows.1.cpu_info"),
        ("use_mmap", [[[[1]]]], "rows.1.use_mmap"),
        ("devices", "x" * 10_000, "rows.1.devices"),
    ],
)
def test_a_bad_cell_in_json_names_the_row_and_field(field, value, path):
    text = json.dumps(json_rows()[:1] + [{**json_rows()[1], field: value}], ensure_ascii=True)
    assert path in errors_of(text)


def test_a_bad_cell_in_jsonl_names_the_row_and_field():
    lines = read("jsonl").splitlines()
    row = json.loads(lines[2])
    row["flash_attn"] = {}
    lines[2] = json.dumps(row)
    assert list(errors_of("\n".join(lines))) == ["rows.2.flash_attn"]


def test_a_malformed_jsonl_line_is_named_by_its_line_in_the_file():
    lines = read("jsonl").splitlines()
    lines[2] = lines[2][:-5]  # cut inside the object
    errors = errors_of("\n".join(lines))
    assert "line 3" in errors["file"][0]


def test_a_hundred_thousand_nested_brackets_are_refused():
    assert "file" in errors_of("[" * 100_000 + "]" * 100_000)
    assert "file" in errors_of('{"build_commit": ' + "[" * 100_000 + "]" * 100_000 + "}\n")


def test_a_superscript_digit_where_an_integer_goes_is_named():
    assert "rows.0.n_prompt" in errors_of(csv_cell("n_prompt", "²"))


def test_text_in_csv_samples_is_named():
    assert "rows.0.samples_ts" in errors_of(csv_with_samples("abc"))


def test_a_csv_row_with_extra_cells_is_named():
    lines = read("csv").splitlines()
    lines[2] += ',"surplus"'
    errors = errors_of("\n".join(lines) + "\n")
    assert list(errors) == ["rows.1"] and "more cells" in errors["rows.1"][0]


def test_a_csv_with_bare_carriage_returns_is_read_like_the_same_file_with_newlines():
    """A bare \\r ends a line (old Mac files); inside a cell it is text."""
    rows = llamabench.parse(read("csv").replace("\n", "\r"))
    assert [r.workload_name for r in rows] == [r.workload_name for r in llamabench.parse(read("csv"))]
    inside = llamabench.parse(read("csv").replace('"AMD EPYC"', '"AMD\rEPYC" x', 1))
    assert inside[0].raw["cpu_info"] == "AMD\rEPYC x"


def test_a_csv_the_csv_module_refuses_names_its_line():
    huge = read("csv").replace('"AMD EPYC"', '"' + "A" * 200_000 + '"', 1)  # over csv's field size limit
    errors = errors_of(huge)
    assert "line 2" in errors["file"][0]


def test_the_row_schema_is_one_entry_point_for_any_reader():
    """A reader of another format hands dicts of llama-bench's columns to checked_rows."""
    rows = checked_rows(json_rows())
    assert [r.workload_name for r in rows] == [r.workload_name for r in llamabench.parse(read("json"))]
    with pytest.raises(LlamaBenchError) as caught:
        checked_rows([{**json_rows()[0], "n_gen": "eight"}])
    assert list(caught.value.errors) == ["rows.0.n_gen"]
    assert "samples_ts" in LlamaBenchRow.model_fields


@pytest.mark.django_db
@pytest.mark.parametrize(
    "text",
    [
        read("csv").replace('"AMD EPYC"', '"' + "A" * 200_000 + '"', 1),
        csv_cell("n_prompt", "²"),
        csv_with_samples("abc"),
        read("csv").splitlines()[0] + "\n" + read("csv").splitlines()[1] + ',"surplus"\n',
        with_row("flash_attn", [1]),
        with_row("flash_attn", {}),
        json.dumps(json_rows()).replace('"AMD EPYC"', '"AMD\\ud800"', 1),
        "[" * 100_000 + "]" * 100_000,
        with_row("n_depth", 1e30),
    ],
    ids=[
        "huge-cell",
        "superscript",
        "abc-samples",
        "extra-cells",
        "flash-list",
        "flash-dict",
        "surrogate",
        "deep",
        "depth",
    ],
)
def test_the_import_api_answers_400_for_every_malformed_file(rig_with_token, text):
    """The bare-\\r CSV of the report is read now (below); a cell over csv's limit stands in for csv.Error."""
    response = rig_with_token.client.post(
        "/api/llama-bench/", data=text.encode("utf-8", "surrogatepass"), content_type="text/plain"
    )
    assert response.status_code == 400, response.content[:300]
    assert response.json()["errors"]
    assert Run.objects.count() == 0


@pytest.mark.django_db
def test_the_import_api_takes_a_csv_with_bare_carriage_returns(rig_with_token):
    text = read("csv").replace("\n", "\r").replace('"AMD EPYC"', '"AMD\rEPYC" x', 1)
    response = rig_with_token.client.post("/api/llama-bench/", data=text.encode(), content_type="text/plain")
    assert response.status_code == 201, response.content[:300]
    assert Run.objects.count() == 4

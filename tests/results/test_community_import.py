"""The public result sets (community_data/): every stored figure is the cell on its line of
the source file as fetched, each row cites that line at its commit, the sets' workloads stay
their own, and the GPU pages gather them."""

from __future__ import annotations

import io
import re

import pytest
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from leaderboard.results.models import Run, Source
from leaderboard.results.services.community import CommunityImport, community_import, community_sets
from leaderboard.results.services.community.sources import GEERLING, GEERLING_ISSUES, XIONGJIE
from runners.llamabench import WORKLOAD_PREFIX

pytestmark = pytest.mark.django_db
# The counts stated in community_data/README.md.
ROWS = {GEERLING: 102, GEERLING_ISSUES: 18, XIONGJIE: 796}


def source_lines(key: str) -> list[str]:
    (source_set,) = [s for s in community_sets() if s.key == key]
    return source_set.file.read_text(encoding="utf-8").splitlines()


def cell_under(lines: list[str], line: int, column: str) -> str:
    """The oracle: the cell on ``line`` (1-based) under the header ``column`` of the table it is in."""
    header = next(i for i in range(line - 1, -1, -1) if column in lines[i].split("|") or f" {column} " in lines[i])
    names = [c.strip() for c in lines[header].strip().strip("|").split("|")]
    cells = [c.strip() for c in lines[line - 1].strip().strip("|").split("|")]
    return cells[names.index(column)]


def number_in(cell: str) -> float:
    """The figure of a cell: '92.49 Tokens/s', '**130.58**', or the mean of '346.76 ± 0.45'."""
    return float(re.sub(r"[^0-9.]", "", cell.split("±")[0].replace("Tokens/s", "")))


def sd_in(cell: str) -> float:
    """The SD of a llama-bench 't/s' cell: 0.45 of '346.76 ± 0.45'."""
    return float(cell.split("±")[1])


def check_every_row_of_both_sets_is_stored_once(imported: CommunityImport) -> None:
    assert dict(imported.rows) == ROWS
    assert dict(imported.created) == ROWS
    for key, count in ROWS.items():
        assert Run.objects.filter(source__key=f"community:{key}", provenance="reported").count() == count
    again = community_import()
    assert sum(again.created.values()) == 0
    assert Run.objects.filter(source__key__startswith="community:").count() == sum(ROWS.values())


def check_every_stored_figure_is_the_cell_on_its_source_line(imported: CommunityImport) -> None:
    lines = {key: source_lines(key) for key in ROWS}
    checked = 0
    for run in Run.objects.filter(source__key__startswith="community:"):
        origin = run.extra["community"]
        cell = cell_under(lines[origin["set"]], origin["line"], origin["column"])
        assert cell == origin["printed"]
        decode, prefill = run.decode_tokens_per_s_mean, run.prefill_tokens_per_s_mean
        figure = decode if decode is not None else prefill
        assert figure == number_in(cell), (origin, cell)
        if origin["set"] == GEERLING:
            power = cell_under(lines[GEERLING], origin["line"], "Power (Peak)")
            assert origin["power_w_peak"] == (None if power == "N/A" else number_in(power))
        if origin["set"] == GEERLING_ISSUES:
            # A printed summary: the mean ± SD on its line, the test of its row, no samples.
            test = cell_under(lines[GEERLING_ISSUES], origin["line"], "test")
            assert run.summary_source == "printed" and not run.samples.exists()
            assert run.extra["llama_bench"]["summary"]["stddev_ts"] == sd_in(cell)
            assert run.workload.name == f"geerlingguy/ai-benchmarks: llama-bench {test}"
            assert (decode is not None) == test.startswith("tg")
            if decode is not None:
                assert run.decode_tokens_per_s_stdev == sd_in(cell)
        checked += 1
    assert checked == sum(ROWS.values())


def check_the_oracle_tells_a_wrong_figure_apart(imported: CommunityImport) -> None:
    run = Run.objects.filter(source__key=f"community:{XIONGJIE}", extra__community__column="pp 512").first()
    origin = run.extra["community"]
    cell = cell_under(source_lines(XIONGJIE), origin["line"], "pp 1024")
    assert number_in(cell) != run.prefill_tokens_per_s_mean


def check_each_row_cites_its_line_at_the_commit_with_the_retrieval_date(imported: CommunityImport) -> None:
    run = Run.objects.get(source__key=f"community:{XIONGJIE}", report_key=f"{XIONGJIE}:L227:tg 512")
    origin = run.extra["community"]
    assert origin["row_url"] == (
        "https://github.com/XiongjieDai/GPU-Benchmarks-on-LLM-Inference/blob/"
        "aa72e0ec86c356c41f8281c9733e9a13c3675800/README.md#L227"
    )
    assert origin["retrieved_on"] == "2026-11-24"
    assert run.decode_tokens_per_s_mean == 130.58  # '| 4090 24GB | 8B Q4_K_M | 130.58 | ...'
    assert [(g.model, g.count, g.vram_gb) for g in run.rig.gpus.all()] == [("RTX 4090", 1, 24.0)]
    html = Client().get(f"/runs/{run.pk}/").content.decode()
    assert origin["row_url"] in html and "retrieved 2026-11-24" in html
    source = Source.objects.get(key=f"community:{GEERLING}")
    assert source.url.endswith("/blob/bdf94413f5f273c985c164ac0abfafa312c4390f/README.md")


def check_the_issue_tables_cite_their_issue_and_leave_out_the_pg_rows(imported: CommunityImport) -> None:
    lines = source_lines(GEERLING_ISSUES)
    tables = [i for i, line in enumerate(lines, start=1) if line.startswith("| llama") or line.startswith("| qwen2")]
    combined = [i for i in tables if "+tg" in lines[i - 1]]
    assert len(tables) == 24 and len(combined) == 6
    stored = set(
        Run.objects.filter(source__key=f"community:{GEERLING_ISSUES}").values_list("extra__community__line", flat=True)
    )
    assert stored == set(tables) - set(combined)
    run = Run.objects.get(source__key=f"community:{GEERLING_ISSUES}", report_key=f"{GEERLING_ISSUES}:L28:t/s")
    origin = run.extra["community"]
    assert lines[27].split("|")[-2].strip() == "36.23 ± 17.62" == origin["printed"]
    assert origin["row_url"] == origin["details_url"] == "https://github.com/geerlingguy/ai-benchmarks/issues/20"
    assert origin["retrieved_on"] == "2026-11-24"
    assert run.rig.name == "geerlingguy: HiFive Premier P550 (AMD RX 580)"
    assert [g.model for g in run.rig.gpus.all()] == ["Radeon RX 580"]
    assert (run.stack.engine, run.stack.build, run.workload.repetitions) == ("llama.cpp", "b4696-e598697d", 2)
    # The README's eval rate for that system is the same tg128 figure.
    readme = Run.objects.get(source__key=f"community:{GEERLING}", rig=run.rig)
    assert readme.decode_tokens_per_s_mean == run.decode_tokens_per_s_mean == 36.23
    html = Client().get(f"/runs/{run.pk}/").content.decode()
    assert origin["row_url"] in html


def check_multi_gpu_rows_and_apple_names_map_onto_rigboards_gpu_models(imported: CommunityImport) -> None:
    eight = Run.objects.filter(rig__name="XiongjieDai: 4090 24GB * 8").first()
    assert [(g.model, g.count) for g in eight.rig.gpus.all()] == [("RTX 4090", 8)]
    m1 = Run.objects.filter(rig__name="XiongjieDai: M1 7-Core GPU 8GB").first()
    assert [g.model for g in m1.rig.gpus.all()] == ["Apple M1 (7-core GPU)"]
    vulkan = Run.objects.filter(rig__name="geerlingguy: Pi CM5 - 16GB (Nvidia RTX 4090)").select_related("stack")
    assert {(r.stack.engine, r.stack.build_flags) for r in vulkan} == {("llama.cpp", "backend: Vulkan")}


def check_the_sets_workloads_are_their_own(imported: CommunityImport) -> None:
    names = set(Run.objects.filter(source__key__startswith="community:").values_list("workload__name", flat=True))
    assert "geerlingguy/ai-benchmarks: eval rate" in names
    assert "XiongjieDai/GPU-Benchmarks-on-LLM-Inference: llama-bench tg512" in names
    assert "geerlingguy/ai-benchmarks: llama-bench tg128" in names
    assert not any(name.startswith(WORKLOAD_PREFIX) for name in names)


def check_a_gpu_page_gathers_both_sets(imported: CommunityImport) -> None:
    html = Client().get(reverse("boards:gpu", args=["RTX 4090"])).content.decode()
    assert "XiongjieDai: 4090 24GB * 2" in html
    assert "geerlingguy: Intel 265K Custom PC (Nvidia RTX 4090)" in html


def test_both_sets_imported_every_figure_as_its_source_prints_it():
    """One import of the ~900 rows (about ten seconds on PostgreSQL), checked from every side."""
    imported = community_import()
    check_every_row_of_both_sets_is_stored_once(imported)
    check_every_stored_figure_is_the_cell_on_its_source_line(imported)
    check_the_oracle_tells_a_wrong_figure_apart(imported)
    check_each_row_cites_its_line_at_the_commit_with_the_retrieval_date(imported)
    check_the_issue_tables_cite_their_issue_and_leave_out_the_pg_rows(imported)
    check_multi_gpu_rows_and_apple_names_map_onto_rigboards_gpu_models(imported)
    check_the_sets_workloads_are_their_own(imported)
    check_a_gpu_page_gathers_both_sets(imported)


def test_the_command_reports_the_counts_per_set():
    out = io.StringIO()
    call_command("import_community", "--set", GEERLING, stdout=out)
    assert f"{GEERLING}: 102 rows, 102 new runs, 0 already stored" in out.getvalue()
    assert not Run.objects.filter(source__key=f"community:{XIONGJIE}").exists()

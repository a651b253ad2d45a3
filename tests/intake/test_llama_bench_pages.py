"""/llama-bench/: GPUs ranked on one test and model file; /llama-bench/compare/: A vs B per test."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.test import Client

from leaderboard.intake.services import llama_bench_import
from leaderboard.results.services.rigs import GpuSpec, rig_create

pytestmark = pytest.mark.django_db
FILES = Path(__file__).resolve().parents[1] / "fixtures" / "llama_bench"


def bench_text(
    *, scale: float = 1.0, build_number: int | None = None, threads: int | None = None, backends: str = "CUDA"
) -> str:
    """The real -o json file, its figures scaled (another GPU, another build), run on
    ``backends`` (the recorded file's are "CPU")."""
    rows = json.loads((FILES / "gemma-cpu.json").read_text())
    for row in rows:
        row["backends"] = backends
        row["samples_ts"] = [s * scale for s in row["samples_ts"]]
        row["avg_ts"] = sum(row["samples_ts"]) / len(row["samples_ts"])
        if build_number is not None:
            row["build_number"] = build_number
        if threads is not None:
            row["n_threads"] = threads
    return json.dumps(rows)


def test_the_board_ranks_gpus_on_one_test_and_one_model_file():
    slow = rig_create(name="slow-rig", gpus=[GpuSpec(model="RTX 3060")])
    fast = rig_create(name="fast-rig", gpus=[GpuSpec(model="RTX 4090")])
    llama_bench_import(rig=slow, text=bench_text())
    imported = llama_bench_import(rig=fast, text=bench_text(scale=3.0))
    tg = next(r for r in imported.runs if r.workload.name == "llama-bench tg8 @ d0")

    page = Client().get("/llama-bench/", {"test": "llama-bench tg8 @ d0", "model": tg.model_file_id})

    assert page.status_code == 200
    html = page.content.decode()
    assert html.index("RTX 4090") < html.index("RTX 3060")
    assert f"/runs/{tg.pk}/" in html
    only = Client().get("/llama-bench/", {"test": "llama-bench tg8 @ d0", "model": tg.model_file_id, "gpu": "3060"})
    assert "RTX 4090" not in only.content.decode()
    # The GPU page shows where the GPU stands on each test (LocalScore-style).
    gpu_page = Client().get("/gpus/RTX 3060/")
    places = {p.test: (p.place.rank, p.of) for p in gpu_page.context["llama_bench_places"]}
    assert places["llama-bench tg8 @ d0"] == (2, 2)
    assert "gpu-llama-bench" in gpu_page.content.decode()


def test_a_cpu_backend_file_is_ranked_under_the_cpu_not_the_rigs_gpu():
    rig = rig_create(name="gpu-rig-cpu-file", gpus=[GpuSpec(model="RTX 4060 Ti")], cpu="Ryzen 7 5700X")
    imported = llama_bench_import(rig=rig, text=bench_text(backends="CPU"))  # rows say "backends": "CPU"
    tg = next(r for r in imported.runs if r.workload.name == "llama-bench tg8 @ d0")

    page = Client().get("/llama-bench/", {"test": "llama-bench tg8 @ d0", "model": tg.model_file_id})

    ranking = page.context["ranking"]
    assert [row.gpus for row in ranking] == ["CPU only (AMD EPYC)"]  # the file's own CPU info
    assert Client().get("/gpus/RTX 4060 Ti/").context["llama_bench_places"] == []


def test_compare_lists_each_test_with_both_builds_and_the_speedup():
    rig = rig_create(name="dev-rig", gpus=[GpuSpec(model="RTX 4090")])
    a = llama_bench_import(rig=rig, text=bench_text(build_number=100))
    b = llama_bench_import(rig=rig, text=bench_text(scale=1.25, build_number=101))
    build_a, build_b = a.runs[0].stack.build, b.runs[0].stack.build

    page = Client().get("/llama-bench/compare/", {"rig": "dev-rig", "vary": "build", "a": build_a, "b": build_b})

    assert page.status_code == 200
    rows = page.context["rows"]
    assert sorted(r.test for r in rows) == ["pp32 @ d0", "pp32 @ d64", "tg8 @ d0", "tg8 @ d64"]
    assert all(r.speedup == pytest.approx(1.25) for r in rows)
    assert "1.25" in page.content.decode()


def test_compare_two_configurations_holds_the_build():
    rig = rig_create(name="cfg-rig", gpus=[GpuSpec(model="RTX 4090")])
    a = llama_bench_import(rig=rig, text=bench_text(threads=2))
    b = llama_bench_import(rig=rig, text=bench_text(scale=0.5, threads=8))
    llama_bench_import(rig=rig, text=bench_text(scale=9.0, threads=8, build_number=7))  # another build: not paired
    hash_a, hash_b = a.runs[0].configuration.config_hash, b.runs[0].configuration.config_hash
    assert hash_a != hash_b
    assert {r.configuration.config_hash for r in a.runs} == {hash_a}  # one invocation, one configuration

    page = Client().get("/llama-bench/compare/", {"rig": "cfg-rig", "vary": "config", "a": hash_a, "b": hash_b})

    rows = page.context["rows"]
    assert sorted(r.test for r in rows) == ["pp32 @ d0", "pp32 @ d64", "tg8 @ d0", "tg8 @ d64"]
    assert all(r.speedup == pytest.approx(0.5) for r in rows)


def test_the_community_sets_figures_are_on_the_board_as_printed_summaries():
    """XiongjieDai's 796 llama-bench figures and the 18 of Geerling's issues are on the
    board made for llama-bench results, each labelled a printed summary with its line.
    Oracle: every ranked figure is the cell its source printed (``printed``), the best
    of its GPU set; and every test of the sets is offered."""
    from django.core.management import call_command

    from leaderboard.results.models import Run
    from leaderboard.results.services.community.sources import GEERLING_ISSUES, XIONGJIE

    for key in (XIONGJIE, GEERLING_ISSUES):
        call_command("import_community", "--set", key, stdout=io.StringIO())
    community = Run.objects.filter(source__key__in=[f"community:{XIONGJIE}", f"community:{GEERLING_ISSUES}"])
    tests = set(community.values_list("workload__name", flat=True))

    page = Client().get("/llama-bench/")
    assert set(page.context["tests"]) >= tests and len(tests) == 11  # 8 of XiongjieDai's, 3 of Geerling's
    shown = 0
    for test in sorted(tests):
        for model_id in set(community.filter(workload__name=test).values_list("model_file_id", flat=True)):
            board = Client().get("/llama-bench/", {"test": test, "model": model_id})
            for row in board.context["ranking"]:
                printed = float(row.printed["printed"].split("±")[0])
                assert row.tokens_per_s == pytest.approx(printed), (test, row.gpus)
                assert row.printed["row_url"].startswith("https://github.com/")
                shown += 1
            assert board.content.decode().count("printed summary</span>") == len(board.context["ranking"])
    # One row per GPU set and file: as many as the sets have distinct ones, none lost.
    assert shown == len(set(community.values_list("workload__name", "model_file_id", "rig__name")))


def test_compare_offers_the_rigs_builds_and_says_when_there_is_nothing_to_compare():
    rig = rig_create(name="one-build-rig", gpus=[GpuSpec(model="RTX 4090")])
    llama_bench_import(rig=rig, text=bench_text(build_number=100))

    html = Client().get("/llama-bench/compare/").content.decode()
    assert '<select name="rig" id="compare-rig">' in html and "one-build-rig (1 build, 1 configuration)" in html
    assert 'id="compare-nothing"' in html and 'name="a"' not in html  # no blank boxes

    llama_bench_import(rig=rig, text=bench_text(scale=1.25, build_number=101))
    page = Client().get("/llama-bench/compare/")
    html = page.content.decode()
    assert 'id="compare-a"' in html and 'id="compare-b"' in html and 'id="compare-nothing"' not in html
    # The two builds are chosen and compared at once: no typing.
    assert page.context["rows"] and all(r.speedup == pytest.approx(1.25) for r in page.context["rows"])

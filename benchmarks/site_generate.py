"""Fill a PostgreSQL database with a realistic Rigboard for the site benchmark:
prints what it made and how long it took, not a test.

Default scale: 100k finished runs with 10 repetitions each (1M samples) and a
7-depth context sweep on one run in five (~140k sweep points), over 200 rigs,
60 model files, 24 stacks and 400 configurations. Catalog rows go in through
the ORM; runs, samples and sweep points through COPY, in chunks of run ids spread
over worker processes with the big tables' secondary indexes built after the load
(``site_load.py``); then each run's bound share (``refresh_bounds --workers``).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/rb_bench python benchmarks/site_generate.py [--runs 100000]

It empties the results tables first, so it refuses a database whose name does
not contain "bench" unless given --force.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import sys
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "leaderboard.settings")
# As before DEBUG defaulted to off (issue 11): the development settings these were measured with.
os.environ.setdefault("DEBUG", "true")
os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/rb_bench")
sys.path.insert(0, str(Path(__file__).resolve().parent))
import site_load  # noqa: E402

GPUS = [  # model, VRAM GB, relative decode speed
    ("RTX 3070", 8, 0.35),
    ("RTX 3090", 24, 0.8),
    ("RTX 3090 Ti", 24, 0.85),
    ("RTX 4090", 24, 1.1),
    ("RTX 5090", 32, 1.4),
    ("RTX 5090M Laptop", 24, 1.0),
    ("RTX A6000", 48, 0.8),
    ("H100 PCIe", 80, 1.8),
]
ENGINES = ["llama.cpp", "ik_llama.cpp", "vllm", "ollama", "sglang", "beellama"]
SPECS = [("none", 1.0), ("mtp", 1.6), ("draft", 1.3), ("dflash", 1.4), ("eagle", 1.5), ("ngram", 1.1)]
QUANTS = ["Q4_K_M", "UD-Q3_K_XL", "Q6_K_XL", "IQ2_XXS", "IQ3_S", "NVFP4", "AWQ-INT4", "Q8_0"]
MODELS = [  # name, architecture, total B, active B
    ("Qwen3.6-35B-A3B", "moe", 35, 3),
    ("Qwen3.6-27B", "dense", 27, None),
    ("Qwen3.5-122B-A10B", "moe", 122, 10),
    ("Nemotron-Elastic-30B-A3B", "moe", 30, 3),
    ("Gemma-4-26B-A4B", "moe", 26, 4),
    ("gemma-3-270m", "dense", 0.27, None),
    ("Llama-3.3-70B", "dense", 70, None),
    ("MiniMax-M2.5", "moe", 230, 10),
]
CTX = [(4096, "4K"), (8192, "8K"), (16384, "16K"), (32768, "32K"), (65536, "64K"), (131072, "128K"), (262144, "256K")]


def setup_django() -> None:
    import django

    django.setup()


def ensure_database() -> str:
    """Create the target database when missing; return its name."""
    import psycopg
    from django.conf import settings

    name = settings.DATABASES["default"]["NAME"]
    params = settings.DATABASES["default"]
    with psycopg.connect(
        host=params.get("HOST") or "127.0.0.1",
        port=params.get("PORT") or 5432,
        user=params.get("USER") or "postgres",
        dbname="postgres",
        autocommit=True,
    ) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone()
        if not exists:
            conn.execute(f'CREATE DATABASE "{name}"')
    return name


def make_catalog(rng: random.Random, *, rigs: int) -> dict[str, Any]:
    from leaderboard.results.models import Configuration, ModelFile, Rig, RigGpu, Stack, Workload
    from leaderboard.results.services.keys import config_hash

    rig_objs = Rig.objects.bulk_create(
        [Rig(name=f"bench-rig-{i:04d}", cpu="AMD 9900X", ram_gb=rng.choice([64, 96, 128, 192])) for i in range(rigs)]
    )
    gpu_objs = []
    rig_speed: dict[int, float] = {}
    rig_gpus: dict[int, list[dict[str, Any]]] = {}
    for rig in rig_objs:
        model, vram, speed = rng.choice(GPUS)
        count = rng.choice([1, 1, 1, 2, 2, 4, 6])
        groups = [(model, count)]
        if rng.random() < 0.1:  # a mixed rig, like seed 000's 3090 Ti + 3090
            groups.append(("RTX 3090", 1))
        for position, (m, c) in enumerate(groups):
            gpu_objs.append(RigGpu(rig=rig, model=m, count=c, vram_gb=vram, position=position))
        rig_speed[rig.pk] = speed
        rig_gpus[rig.pk] = [{"model": m, "count": c} for m, c in groups]
    RigGpu.objects.bulk_create(gpu_objs)
    stacks = Stack.objects.bulk_create(
        [Stack(engine=ENGINES[i % len(ENGINES)], build=f"b{7000 + i}-{i:07x}") for i in range(24)]
    )
    model_files = ModelFile.objects.bulk_create(
        [
            ModelFile(
                name=name,
                architecture=arch,
                total_params_b=total,
                active_params_b=active,
                quantization=quant,
                weight_format="GGUF" if not quant.startswith(("NVFP4", "AWQ")) else quant,
                sha256=f"{abs(hash((name, quant))):064x}"[:64],
            )
            for name, arch, total, active in MODELS
            for quant in QUANTS[:8]
        ][:60]
    )
    configurations = []
    for i in range(400):
        spec = SPECS[i % len(SPECS)][0]
        fields = {
            "ctx_size": CTX[i % len(CTX)][0],
            "speculative_type": spec,
            "draft_n_max": 3 if spec != "none" else None,
            "cache_type_k": "q4_0",
            "cache_type_v": "q4_0",
            "batch_size": 512,
            "threads": 8 + i % 9,
            "command_line": f"llama-server -m model.gguf --ctx-size {CTX[i % len(CTX)][0]} -t {8 + i % 9}",
        }
        configurations.append(Configuration(config_hash=config_hash({**fields, "i": i}), **fields))
    configurations = Configuration.objects.bulk_create(configurations)
    workloads = Workload.objects.bulk_create(
        [
            Workload(name=n, version="1", max_tokens=2000, repetitions=10)
            for n in ("space-invaders-html", "long-ctx", "code-review", "chat", "summary")
        ]
    )
    return {
        "rigs": rig_objs,
        "rig_speed": rig_speed,
        "rig_gpus": rig_gpus,
        "stacks": stacks,
        "model_files": model_files,
        "configurations": configurations,
        "workloads": workloads,
    }


RUN_COLUMNS = [
    "id", "uuid", "rig_id", "stack_id", "model_file_id", "configuration_id", "workload_id", "status",
    "failure_reason", "provenance", "report_key", "comparison_key", "started_at", "finished_at", "created_at",
    "updated_at", "notes", "fingerprint", "server_log_tail", "extra", "summary_source", "n_samples",
    "failed_checks", "decode_tokens_per_s_mean", "decode_tokens_per_s_median", "decode_tokens_per_s_stdev",
    "decode_tokens_per_s_min", "decode_tokens_per_s_max", "decode_tokens_per_s_range", "decode_tokens_per_s_ci95_low",
    "decode_tokens_per_s_ci95_high", "prefill_tokens_per_s_mean", "ttft_ms_mean", "acceptance_pct", "power_w_mean",
    "energy_j_total", "tokens_per_kwh",
]  # fmt: skip
SAMPLE_COLUMNS = [
    "run_id", "index", "decode_tokens_per_s_server", "decode_tokens_per_s_client", "prefill_tokens_per_s", "ttft_ms",
    "prompt_tokens", "tokens_generated", "draft_n", "draft_n_accepted", "energy_j", "power_w_mean", "power_w_peak",
    "stop_reason", "output_ok", "flags", "itl_ms",
]  # fmt: skip
SWEEP_COLUMNS = [
    "run_id", "ctx_tokens", "ctx_label", "prefill_tokens_per_s", "decode_tokens_per_s", "ttft_ms", "power_w",
    "tokens_per_kwh", "note",
]  # fmt: skip


def _copy(cur: Any, table: str, columns: list[str], rows: list[tuple]) -> None:
    quoted = ", ".join(f'"{c}"' for c in columns)
    with cur.copy(f"COPY {table} ({quoted}) FROM STDIN") as copy:
        for row in rows:
            copy.write_row(row)


class RunFactory:
    """Makes one run's rows (run, samples, sweep points) from the seeded generator."""

    def __init__(self, catalog: dict[str, Any], *, reps: int, sweep_share: float) -> None:
        self.rng = random.Random(0)  # each chunk sets its own (chunk_loader)
        self.catalog = catalog
        self.reps = reps
        self.sweep_share = sweep_share
        self.keys: dict[tuple[int, int, int], str] = {}
        self.model_speed = {
            m.pk: 60.0 / max(1.0, (m.active_params_b or m.total_params_b or 1) ** 0.5) for m in catalog["model_files"]
        }
        self.spec_gain = dict(SPECS)
        self.start = datetime(2025, 6, 1, tzinfo=UTC)
        # Zipf-like: rig k runs about 1/k as often as the busiest one.
        self.rig_weights = list(itertools.accumulate(1 / (k + 1) for k in range(len(catalog["rigs"]))))

    def _key(self, rig: Any, model: Any, workload: Any) -> str:
        from leaderboard.results.services.keys import comparison_key

        key_id = (rig.pk, model.pk, workload.pk)
        if key_id not in self.keys:
            self.keys[key_id] = comparison_key(
                gpus=self.catalog["rig_gpus"][rig.pk],
                model_identity=model.identity,
                workload_identity=f"{workload.name}|1||2000",
            )
        return self.keys[key_id]

    def make(self, run_id: int) -> tuple[tuple, list[tuple], list[tuple]]:
        from runners import stats

        rng, catalog, reps = self.rng, self.catalog, self.reps
        rigs = catalog["rigs"]
        rig = rng.choices(rigs, cum_weights=self.rig_weights)[0]  # a few rigs run far more than the rest
        stack = rng.choice(catalog["stacks"])
        model = rng.choice(catalog["model_files"])
        config = rng.choice(catalog["configurations"])
        workload = catalog["workloads"][0 if rng.random() < 0.6 else rng.randrange(1, 5)]
        base = catalog["rig_speed"][rig.pk] * self.model_speed[model.pk] * self.spec_gain[config.speculative_type]
        base *= rng.uniform(0.8, 1.25)
        tps = [max(0.5, rng.gauss(base, base * 0.015)) for _ in range(reps)]
        spec = config.speculative_type != "none"
        drafted = [rng.randint(1500, 1700) if spec else None for _ in range(reps)]
        accepted = [int(d * rng.uniform(0.6, 0.9)) if d else None for d in drafted]
        power = rng.uniform(120, 850)
        output_ok = [rng.random() > 0.01 for _ in range(reps)]
        energy = [power * 2000 / t for t in tps]
        summary = stats.summarize(tps)
        assert summary is not None
        created = self.start + timedelta(seconds=run_id * 150 + rng.randint(0, 100))
        total_energy = sum(energy)
        run_row = (
            run_id, uuid.UUID(int=rng.getrandbits(128)), rig.pk, stack.pk, model.pk, config.pk, workload.pk,
            "finished", "", "measured", "", self._key(rig, model, workload), created, created + timedelta(minutes=4),
            created, created, "", json.dumps({"gpus": catalog["rig_gpus"][rig.pk]}), "", "{}", "samples", reps,
            output_ok.count(False), summary.mean, summary.median, summary.stdev, summary.min, summary.max,
            summary.range, summary.ci95_low, summary.ci95_high, rng.uniform(300, 3000), rng.uniform(50, 900),
            stats.acceptance_pct(drafted, accepted), power, total_energy,
            stats.tokens_per_kwh(2000 * reps, total_energy),
        )  # fmt: skip
        samples = [
            (
                run_id, i + 1, tps[i], tps[i] * 0.995, rng.uniform(300, 3000), rng.uniform(50, 900), 120, 2000,
                drafted[i], accepted[i], energy[i], power, power * 1.1, "length", output_ok[i], "[]", "[]",
            )
            for i in range(reps)
        ]  # fmt: skip
        sweep = []
        if rng.random() < self.sweep_share:
            for depth, (ctx, label) in enumerate(CTX):
                decode = summary.mean * (1 - 0.04 * depth)
                watts = power + depth * 5
                sweep.append(
                    (run_id, ctx, label, 650 - 20 * depth, decode, 800 * 2**depth, watts, decode * 3.6e6 / watts, "")
                )
        return run_row, samples, sweep


CHUNK_RUNS = 10_000  # runs a worker makes and copies in one transaction


def chunk_rows(factory: RunFactory, chunk: int, *, runs: int, seed: int) -> tuple[list[tuple], ...]:
    """Return chunk k's run, sample and sweep rows (runs k·CHUNK_RUNS+1 …), drawn from the
    chunk's own seed: the same whichever chunks this process made before."""
    first = chunk * CHUNK_RUNS + 1
    factory.rng = random.Random(f"{seed}/{chunk}")
    made = [factory.make(run_id) for run_id in range(first, min(runs, first + CHUNK_RUNS - 1) + 1)]
    return [m[0] for m in made], [row for m in made for row in m[1]], [row for m in made for row in m[2]]


def chunk_loader(factory: RunFactory, *, runs: int, seed: int) -> Any:
    """Return the job that COPYs chunk k's rows in one transaction of a loading session and
    returns its counts."""

    def load(chunk: int) -> dict[str, int]:
        from django.db import connection, transaction

        run_rows, sample_rows, sweep_rows = chunk_rows(factory, chunk, runs=runs, seed=seed)
        with transaction.atomic(), connection.cursor() as cursor:
            cur = cursor.connection.cursor()
            site_load.loading_session(cur)
            _copy(cur, "results_run", RUN_COLUMNS, run_rows)
            _copy(cur, "results_sample", SAMPLE_COLUMNS, sample_rows)
            _copy(cur, "results_sweeppoint", SWEEP_COLUMNS, sweep_rows)
        return {"runs": len(run_rows), "samples": len(sample_rows), "sweep_points": len(sweep_rows)}

    return load


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument("--reps", type=int, default=10, help="repetitions (samples) per run")
    parser.add_argument("--rigs", type=int, default=200)
    parser.add_argument("--sweep-share", type=float, default=0.2, help="share of runs with a context sweep")
    parser.add_argument("--seed", type=int, default=20261121)
    parser.add_argument("--force", action="store_true", help="allow a database whose name lacks 'bench'")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="loading processes (default: cores)")
    parser.add_argument(
        "--no-shares", dest="shares", action="store_false", help="skip storing bound shares (refresh_bounds)"
    )
    args = parser.parse_args()

    setup_django()
    name = ensure_database()
    if "bench" not in name and not args.force:
        print(f"refusing to empty {name!r}: its name lacks 'bench' (use --force)", file=sys.stderr)
        return 2
    from django.core.management import call_command
    from django.db import connection, transaction

    began = time.perf_counter()
    call_command("migrate", verbosity=0)
    with connection.cursor() as cursor:
        cursor.execute(
            "TRUNCATE results_sample, results_sweeppoint, results_publishedcomparisonrow, results_run, "
            "results_configuration, results_stack, results_modelfile, results_workload, results_riggpu, "
            "results_rigtoken, results_rig, results_runboundshare RESTART IDENTITY CASCADE"
        )
    with transaction.atomic():  # committed before the workers start: their runs refer to it
        catalog = make_catalog(random.Random(args.seed), rigs=args.rigs)
    factory = RunFactory(catalog, reps=args.reps, sweep_share=args.sweep_share)
    with connection.cursor() as cursor:
        indexes = site_load.secondary_indexes(cursor)
        site_load.drop_indexes(cursor, indexes)
    chunks = -(-args.runs // CHUNK_RUNS)
    counts = site_load.run_chunks(
        chunk_loader(factory, runs=args.runs, seed=args.seed), chunks=chunks, workers=args.workers
    )
    loaded = time.perf_counter()
    with connection.cursor() as cursor:
        site_load.build_indexes(cursor, indexes)
        site_load.rebuild_spreads(cursor)
        cursor.execute("SELECT setval(pg_get_serial_sequence('results_run', 'id'), %s)", (max(args.runs, 1),))
        # Statistics before the shares' queries: without them a batch's samples were read by
        # a parallel scan of the whole table (2,000 shares a second at 1M runs, not 3,400).
        cursor.execute("ANALYZE")
    indexed = time.perf_counter()
    if args.shares:
        call_command("refresh_bounds", workers=args.workers)
    shared = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE")
        cursor.execute("SELECT pg_database_size(current_database())")
        size_gb = cursor.fetchone()[0] / 1e9
    done = time.perf_counter()
    print(f"database {name}: {counts['runs']:,} runs, {counts['samples']:,} samples, "
          f"{counts['sweep_points']:,} sweep points over {args.rigs} rigs, {size_gb:.1f} GB")  # fmt: skip
    print(f"{args.workers} workers: load {loaded - began:.1f} s, "
          f"{len(indexes)} indexes and the spreads {indexed - loaded:.1f} s, "
          f"shares {shared - indexed:.1f} s, vacuum analyze {done - shared:.1f} s; "
          f"{done - began:.1f} s in all")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

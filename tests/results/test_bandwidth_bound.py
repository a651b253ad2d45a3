"""The bound of the seeds' rigs from their articles' hardware, and the estimate's 80%
interval held to its promise on rows it did not learn from."""

from __future__ import annotations

import pytest
from django.core.management import call_command

from leaderboard.results.hardware.catalog import gpu_spec, system_memory
from leaderboard.results.hardware.estimate import Observation, interval, leave_one_rig_out
from leaderboard.results.hardware.selectors import bounds_of, observation_of, public_bounds
from leaderboard.results.models import Rig, Run
from tests.boards import test_bound_pages

pytestmark = pytest.mark.django_db


@pytest.fixture
def published() -> None:
    call_command("import_published", verbosity=0)


def test_seed_004s_bound_is_its_laptop_cards_bandwidth_over_the_active_share_of_its_file(published: None) -> None:
    # "RTX 5090M Laptop (24 GB GDDR7)": 256-bit at 28 Gbps; "UD-Q3_K_XL (17.2 GB on disk)",
    # 35B parameters, "roughly 3 billion" active.
    run = Run.objects.get(source__key__startswith="004", decode_tokens_per_s_mean=249.3)
    rb = bounds_of(Run.objects.filter(pk=run.pk))[run.pk]
    assert rb.bound is not None
    assert rb.bound.tokens_per_s == pytest.approx(256 / 8 * 28e9 / (17.2e9 * 3 / 35))
    # MTP at 86.6% acceptance stays under this single-token bound: a share, not "past it".
    assert rb.gauge is not None and rb.share == pytest.approx(249.3 / rb.bound.tokens_per_s)


def test_seed_000s_rig_reads_a_3090_at_936_gbs_and_ddr5_5200_on_two_channels(published: None) -> None:
    # "AMD 9900X CPU", "192GB DDR5-5200 RAM", "Two 3090s (Ti + standard)".
    assert gpu_spec("RTX 3090").bandwidth_gb_s == 384 / 8 * 19.5
    assert gpu_spec("RTX 3090 Ti").bandwidth_gb_s == 384 / 8 * 21
    runs = Run.objects.filter(source__key__startswith="000")
    rig = runs.first().rig
    ddr = system_memory(cpu=rig.cpu, texts=(rig.name, rig.notes))
    assert ddr is not None and ddr.gb_per_s == pytest.approx(2 * 5200e6 * 8 / 1e9)
    bounds = bounds_of(runs)
    worker = next(rb for rb in bounds.values() if rb.facts.model.total_params_b == 122)
    # 75% of the experts in DDR5, but the article gives no expert share of the 10B active:
    # no bound rather than a guessed split.
    assert worker.bound is None and "does not fit" in worker.reason
    reasoner = next(rb for rb in bounds.values() if rb.facts.model.total_params_b != 122)
    assert reasoner.bound is not None and reasoner.bound.gpu is not None
    assert reasoner.bound.gpu.gb_per_s == 1008  # which card ran it is not stated: the faster one


def test_a_read_bandwidth_measured_on_the_rig_is_its_system_memorys(board_run) -> None:
    # This machine's CPU ("AMD EPYC") is in no catalog and the VM states no memory speed:
    # without a measurement its CPU runs have no bound.
    assert system_memory(cpu="AMD EPYC", detected={}) is None
    measured = system_memory(cpu="AMD EPYC", detected={"read_gb_s": 31.1, "read_method": "benchmarks/memread.py"})
    assert measured is not None and measured.gb_per_s == 31.1 and "memread" in measured.source
    Rig.objects.create(name="cpu-rig", cpu="AMD EPYC")  # no GPUs
    header = test_bound_pages.HEADER  # 1.0 GB read per token
    run = board_run(
        rig="cpu-rig", engine="llama.cpp", architecture="dense", spec="none", draft=None, tps=[15.5],
        run={"fingerprint": {"model": {"gguf": header}, "memory": {"read_gb_s": 31.1}}},
    )  # fmt: skip
    rb = bounds_of(Run.objects.filter(pk=run.pk))[run.pk]
    assert rb.bound is not None and rb.bound.tokens_per_s == pytest.approx(31.1e9 / 1.0e9)
    assert rb.share == pytest.approx(15.5 / 31.1)


def test_a_card_sold_in_two_sizes_needs_its_size_and_an_unlisted_one_has_no_bandwidth() -> None:
    assert gpu_spec("RTX 3060") is None
    assert gpu_spec("NVIDIA GeForce RTX 3060", vram_gb=12.0).bandwidth_gb_s == 360
    assert gpu_spec("Apple M1 (7-core GPU)").bandwidth_gb_s is None  # not stated, not guessed
    assert gpu_spec("NVIDIA H200").bandwidth_gb_s == 4800


def coverage(held: list) -> float:
    return sum(h.inside for h in held) / len(held)


def test_the_80_percent_interval_covers_about_80_percent_of_held_out_rows(published: None) -> None:
    call_command("import_community", verbosity=0)
    observations = [o for rb in public_bounds(limit=100_000).values() if (o := observation_of(rb)) is not None]
    held = leave_one_rig_out(observations)
    assert len(held) >= 200
    assert 0.70 <= coverage(held) <= 0.90, coverage(held)


def test_the_coverage_check_fails_an_interval_that_is_too_narrow() -> None:
    # Shares spread evenly over 0.3–0.9 on 40 rigs: an honest 80% interval covers ~80%,
    # one from a 30% level does not reach the test's 70% floor.
    rows = [
        Observation(str(i), "F", "V", "llama.cpp", "dense", 100.0, 30 + (i * 37 % 60), f"row {i}") for i in range(40)
    ]
    held = leave_one_rig_out(rows)
    assert 0.70 <= coverage(held) <= 0.90
    narrow = []
    for h in held:
        shares = [o.share for o in rows if o.rig_key != h.observation.rig_key]
        low, _, high = interval(shares, level=0.3)
        narrow.append(low <= h.observation.share <= high)
    assert sum(narrow) / len(narrow) < 0.70

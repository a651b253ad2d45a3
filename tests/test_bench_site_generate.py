"""The site generator's bulk path (issue 40, 10M runs): the indexes it drops for the load are
all built again, a chunk's rows do not depend on which chunks came before (so the database
is the same whatever the worker count), and a chunk's COPY stores runs whose samples and
summaries agree. (The generator itself prints figures; it is not a timed test.)"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

import pytest
from django.db import connection

from leaderboard.results.models import Run, Sample

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import site_generate  # noqa: E402
import site_load  # noqa: E402

pytestmark = pytest.mark.django_db


def test_the_indexes_dropped_for_the_load_are_built_again() -> None:
    with connection.cursor() as cursor:
        before = site_load.secondary_indexes(cursor)
        names = {name for name, _ in before}
        # Secondary indexes only: the samples' partial index, not a constraint's index.
        assert "sample_failed_check_idx" in names
        assert "uniq_sample_index" not in names and "results_run_pkey" not in names
        site_load.drop_indexes(cursor, before)
        assert site_load.secondary_indexes(cursor) == []
        site_load.build_indexes(cursor, before, memory="64MB")
        assert site_load.secondary_indexes(cursor) == before


@pytest.fixture
def factory(monkeypatch: pytest.MonkeyPatch) -> site_generate.RunFactory:
    import random

    monkeypatch.setattr(site_generate, "CHUNK_RUNS", 20)
    catalog = site_generate.make_catalog(random.Random(5), rigs=6)
    return site_generate.RunFactory(catalog, reps=4, sweep_share=0.5)


def test_a_chunks_rows_do_not_depend_on_the_chunks_before_it(factory) -> None:
    alone = site_generate.chunk_rows(factory, 2, runs=100, seed=9)
    site_generate.chunk_rows(factory, 0, runs=100, seed=9)
    site_generate.chunk_rows(factory, 1, runs=100, seed=9)
    after_others = site_generate.chunk_rows(factory, 2, runs=100, seed=9)
    assert after_others == alone
    assert [row[0] for row in alone[0]] == list(range(41, 61))
    # …and another seed draws other rows (the comparison can fail).
    assert site_generate.chunk_rows(factory, 2, runs=100, seed=10)[0] != alone[0]


def test_the_last_chunk_stops_at_the_run_count(factory) -> None:
    runs, samples, _ = site_generate.chunk_rows(factory, 4, runs=93, seed=9)
    assert [row[0] for row in runs] == list(range(81, 94))
    assert len(samples) == 13 * 4


def test_a_chunk_is_stored_with_samples_that_match_its_summaries(factory) -> None:
    counts = site_generate.chunk_loader(factory, runs=30, seed=9)(1)
    assert counts["runs"] == 10 and counts["samples"] == 40
    runs = Run.objects.filter(pk__in=range(21, 31))
    assert runs.count() == 10
    for run in runs:
        samples = Sample.objects.filter(run=run).order_by("index")
        tps = list(samples.values_list("decode_tokens_per_s_server", flat=True))
        assert len(tps) == run.n_samples == 4
        assert run.decode_tokens_per_s_mean == pytest.approx(statistics.fmean(tps))
        assert run.decode_tokens_per_s_stdev == pytest.approx(statistics.stdev(tps))
        assert run.failed_checks == samples.filter(output_ok=False).count()


def test_the_spreads_the_loading_sessions_skipped_are_stored_again(factory) -> None:
    from django.db.models import Avg, Count

    from leaderboard.boards.selectors.noise import _measured_runs
    from leaderboard.results.models import CONFIGURATION_GROUP, RunSpread

    loader = site_generate.chunk_loader(factory, runs=60, seed=9)
    for chunk in range(3):
        loader(chunk)
    assert not RunSpread.objects.exists()  # the loading sessions ran without the spreads' trigger
    with connection.cursor() as cursor:
        site_load.rebuild_spreads(cursor)
    groups = (
        _measured_runs().values(*CONFIGURATION_GROUP).annotate(n=Count("pk"), mean=Avg("decode_tokens_per_s_median"))
    )
    expected = {tuple(g[f] for f in CONFIGURATION_GROUP): (g["n"], g["mean"]) for g in groups}
    stored = {tuple(s[f] for f in CONFIGURATION_GROUP): (s["n"], s["mean"]) for s in RunSpread.objects.values()}
    assert sum(n for n, _ in expected.values()) == 60
    assert stored.keys() == expected.keys()
    for key, (n, mean) in expected.items():
        assert stored[key][0] == n and stored[key][1] == pytest.approx(mean)

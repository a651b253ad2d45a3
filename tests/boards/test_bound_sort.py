"""The leaderboard sorts by each run's share of its memory-bandwidth bound (issue 38):
the share is stored where a run is written (a single POST, the bulk intake, an append),
renewed when the rig's GPUs change, and refreshed when it was computed by another
catalog or method. The order a visitor sees is checked in test_sort_shown.py."""

from __future__ import annotations

import re

import pytest
from django.core.management import call_command

from leaderboard.boards.bound_text import gauge_cell, outlier_note
from leaderboard.boards.bound_views import rig_outliers
from leaderboard.results.hardware.selectors import bounds_for_ids, peer_estimate
from leaderboard.results.hardware.stored import (
    bound_digest,
    refresh_stale,
    stale_runs,
    stored_gauges,
    stored_observations,
)
from leaderboard.results.models import Run, RunBoundShare
from leaderboard.results.services.append import run_append
from leaderboard.results.services.rigs import GpuSpec, rig_hardware_update
from tests.boards import test_bound_pages
from tests.fixtures.api import api_run_payload, post_json

pytestmark = pytest.mark.django_db

# The GGUF header of test_bound_pages: 1.0 GB read per token, so a 3090 (936 GB/s) is
# bound at 936 t/s and 468 t/s is half of it.
HEADER = test_bound_pages.HEADER
GGUF = {"fingerprint": {"model": {"gguf": HEADER}}}
DENSE = {"model": "dense-8b", "quant": "Q8_0", "architecture": "dense", "spec": "none", "draft": None}


def stored_share(run_id: int) -> float | None:
    return RunBoundShare.objects.get(run_id=run_id).decode_share


def test_a_new_run_stores_the_share_its_cell_shows(board_run) -> None:
    run = board_run(rig="rig-3090", gpus=[("RTX 3090", 1)], tps=[468.0, 470.0], run=GGUF, **DENSE)
    bound = bounds_for_ids([run.pk])[run.pk]
    expected = bound.share
    assert expected is not None and 0.2 < expected < 1, bound.reason
    assert stored_share(run.pk) == pytest.approx(expected)
    assert RunBoundShare.objects.get(run_id=run.pk).digest == bound_digest()


def test_a_run_without_a_bound_stores_none_and_a_failed_run_nothing(board_run) -> None:
    unknown = board_run(rig="rig-odd", gpus=[("Imaginary GPU 9000", 1)], tps=[468.0], run=GGUF, **DENSE)
    assert stored_share(unknown.pk) is None
    failed = board_run(rig="rig-3090", gpus=[("RTX 3090", 1)], run={**GGUF, "status": "failed"}, samples=[], **DENSE)
    assert not RunBoundShare.objects.filter(run_id=failed.pk).exists()


def test_the_bulk_intake_stores_every_runs_share(rig_with_token) -> None:
    bodies = [api_run_payload() for _ in range(3)]
    assert post_json(rig_with_token.client, "/api/runs/bulk/", {"runs": bodies}).json()["created"] == 3
    runs = list(Run.objects.filter(uuid__in=[b["uuid"] for b in bodies]))
    shares = {pk: rb.share for pk, rb in bounds_for_ids([r.pk for r in runs]).items()}
    assert all(s is not None for s in shares.values()), shares
    assert {r.pk: stored_share(r.pk) for r in runs} == pytest.approx(shares)


def test_new_gpus_on_the_rig_renew_its_runs_shares(board_run) -> None:
    run = board_run(rig="rig-3090", gpus=[("RTX 3090", 1)], tps=[468.0], run=GGUF, **DENSE)
    on_3090 = stored_share(run.pk)
    rig_hardware_update(rig=run.rig, gpus=[GpuSpec(model="RTX 4090", vram_gb=24, count=1)])
    on_4090 = stored_share(run.pk)
    assert on_3090 is not None and on_4090 is not None
    # The same t/s against the 4090's 1008 GB/s: a smaller share, by the ratio of the bandwidths.
    assert on_4090 == pytest.approx(on_3090 * 936 / 1008, rel=1e-6)


def test_a_share_of_another_catalog_is_stale_and_refreshed(board_run, capsys) -> None:
    runs = [board_run(rig=f"rig-{i}", gpus=[("RTX 3090", 1)], tps=[400.0 + i], run=GGUF, **DENSE) for i in range(3)]
    RunBoundShare.objects.filter(run_id=runs[0].pk).update(digest="0" * 16, decode_share=0.01)
    RunBoundShare.objects.filter(run_id=runs[1].pk).delete()
    assert list(stale_runs()) == [runs[0].pk, runs[1].pk]
    assert list(stale_runs(after_id=runs[0].pk)) == [runs[1].pk]
    call_command("refresh_bounds")
    assert "2 bound shares stored" in capsys.readouterr().out
    assert list(stale_runs()) == []
    assert stored_share(runs[0].pk) == pytest.approx(bounds_for_ids([runs[0].pk])[runs[0].pk].share)
    assert refresh_stale() == 0


@pytest.mark.django_db(transaction=True)  # the workers are other processes: they see committed rows only
def test_workers_store_every_stale_share_and_no_other(board_run, capsys) -> None:
    runs = [board_run(rig=f"rig-{i}", gpus=[("RTX 3090", 1)], tps=[400.0 + i], run=GGUF, **DENSE) for i in range(5)]
    fresh = runs[2]
    RunBoundShare.objects.exclude(run_id=fresh.pk).update(digest="0" * 16, decode_share=0.01)
    RunBoundShare.objects.filter(run_id=runs[4].pk).delete()
    untouched = RunBoundShare.objects.get(run_id=fresh.pk).pk
    call_command("refresh_bounds", workers=2)
    assert "4 bound shares stored" in capsys.readouterr().out
    assert list(stale_runs()) == []
    expected = {pk: rb.share for pk, rb in bounds_for_ids([r.pk for r in runs]).items()}
    assert {r.pk: stored_share(r.pk) for r in runs} == pytest.approx(expected)
    assert RunBoundShare.objects.get(run_id=fresh.pk).pk == untouched


def test_a_slice_of_ids_refreshes_that_slice_alone(board_run) -> None:
    runs = [board_run(rig=f"rig-{i}", gpus=[("RTX 3090", 1)], tps=[400.0 + i], run=GGUF, **DENSE) for i in range(3)]
    RunBoundShare.objects.all().delete()
    assert refresh_stale(after_id=runs[0].pk, through_id=runs[1].pk) == 1
    assert list(stale_runs()) == [runs[0].pk, runs[2].pk]


def test_workers_and_a_limit_are_refused_together() -> None:
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="--limit and --workers"):
        call_command("refresh_bounds", workers=2, limit=5)


def test_the_digest_moves_with_the_catalog(tmp_path, monkeypatch) -> None:
    import leaderboard.results.hardware.stored as stored

    copy = tmp_path / "gpus.csv"
    copy.write_bytes(stored.DIGEST_SOURCES[0].read_bytes())
    monkeypatch.setattr(stored, "DIGEST_SOURCES", (copy, *stored.DIGEST_SOURCES[1:]))
    stored.bound_digest.cache_clear()
    try:
        before = stored.bound_digest()
        copy.write_text(copy.read_text() + "\n")
        stored.bound_digest.cache_clear()
        assert stored.bound_digest() != before
    finally:
        stored.bound_digest.cache_clear()


def test_the_refresh_is_scheduled_nightly_on_a_task_celery_knows() -> None:
    from django_celery_beat.models import PeriodicTask

    from leaderboard.celery import app
    from leaderboard.results.tasks import REFRESH_BOUNDS_TASK

    task = PeriodicTask.objects.get(task=REFRESH_BOUNDS_TASK)
    assert task.enabled and task.crontab is not None
    app.loader.import_default_modules()
    assert REFRESH_BOUNDS_TASK in app.tasks


def test_a_run_finished_by_an_append_stores_its_share(rig_with_token) -> None:
    body = api_run_payload(status="running", samples=[], sweep_points=[], finished_at=None)
    assert post_json(rig_with_token.client, "/api/runs/", body).status_code == 201
    run = Run.objects.get(uuid=body["uuid"])
    assert not RunBoundShare.objects.filter(run=run).exists()
    sample = {"index": 1, "decode_tokens_per_s_server": 50.0, "tokens_generated": 100}
    run_append(run=run, samples=[sample], status="finished")
    assert stored_share(run.pk) == pytest.approx(bounds_for_ids([run.pk])[run.pk].share)


def test_the_stored_peer_pool_and_gpu_shares_equal_the_computed_ones(board_run) -> None:
    from leaderboard.boards.bound_views import share_summaries, stored_share_summaries
    from leaderboard.results.hardware.selectors import bounds_of, public_observations
    from leaderboard.results.hardware.stored import stored_observations

    for i in range(6):
        board_run(rig=f"peer-{i}", gpus=[("RTX 3090", 1)], tps=[300.0 + 50 * i], run=GGUF, **DENSE)
    board_run(rig="peer-vllm", gpus=[("RTX 3090", 2)], engine="vllm", tps=[500.0], run=GGUF, **DENSE)
    board_run(rig="peer-spec", gpus=[("RTX 3090", 1)], tps=[2000.0], run=GGUF, **{**DENSE, "spec": "mtp"})
    board_run(rig="peer-odd", gpus=[("Imaginary GPU 9000", 1)], tps=[100.0], run=GGUF, **DENSE)

    def key(o):
        return (o.label, o.rig_key, o.family, o.vendor, o.engine, o.kind, round(o.bound_tokens_per_s, 6),
                round(o.decode_tokens_per_s, 6))  # fmt: skip

    stored, computed = sorted(map(key, stored_observations())), sorted(map(key, public_observations()))
    assert len(computed) == 7 and stored == computed
    assert sorted(map(key, stored_observations(limit=3))) == sorted(map(key, public_observations(limit=3)))
    on_3090 = Run.objects.filter(rig__gpus__model="RTX 3090")
    assert stored_share_summaries(on_3090.distinct()) == (
        share_summaries(bounds_of(on_3090.distinct()).values()),
        False,
    )
    assert [s.n for s in stored_share_summaries(on_3090.distinct())[0]] == [6, 1]  # llama.cpp and vLLM; MTP left out
    # Past its limit, the latest runs only, and said so.
    latest, capped = stored_share_summaries(on_3090.distinct(), latest=3)
    assert capped and sum(s.n for s in latest) <= 3


@pytest.mark.parametrize("sort", ["-bound", "bound"])
def test_the_bound_windows_first_rows_are_the_full_sorts(board_run, sort: str) -> None:
    from leaderboard.boards.filters.ordering import runs_sort, sort_window

    for i, tps in enumerate([300.0, 500.0, 500.0, 700.0, 200.0, 900.0, 400.0]):
        board_run(rig=f"w-{i}", gpus=[("RTX 3090", 1)], tps=[tps], run=GGUF, **DENSE)
    board_run(rig="w-odd", gpus=[("Imaginary GPU 9000", 1)], tps=[800.0], run=GGUF, **DENSE)  # no bound
    missing = board_run(rig="w-new", gpus=[("RTX 3090", 1)], tps=[600.0], run=GGUF, **DENSE)
    RunBoundShare.objects.filter(run=missing).delete()  # written by COPY, not yet refreshed
    ranked = Run.objects.filter(status="finished", decode_tokens_per_s_mean__isnull=False)
    full = list(runs_sort(ranked, sort).values_list("pk", flat=True))
    assert full[-2:] == sorted(full[-2:], key=lambda pk: -Run.objects.get(pk=pk).decode_tokens_per_s_mean)
    for rows in range(1, len(full) + 2):
        window = sort_window(ranked, sort, rows=rows, usd_per_kwh=0.15)
        assert list(runs_sort(window, sort).values_list("pk", flat=True))[:rows] == full[:rows], rows


def test_the_stored_gauge_cells_equal_the_computed_ones(board_run, django_assert_num_queries) -> None:
    """The board's "of bound" cells read the stored shares and titles (one query, issue 40):
    the same HTML as computing each run's bound, for a share, no bound, a plain run past
    its bound and speculative decoding past it; a stale share is computed again."""
    runs = [
        board_run(rig="rig-3090", gpus=[("RTX 3090", 1)], tps=[468.0], run=GGUF, **DENSE),
        board_run(rig="rig-odd", gpus=[("Imaginary GPU 9000", 1)], tps=[468.0], run=GGUF, **DENSE),
        board_run(rig="rig-3090", gpus=[("RTX 3090", 1)], tps=[1500.0], run=GGUF, **DENSE),
        board_run(rig="rig-3090", gpus=[("RTX 3090", 1)], tps=[1872.0], run=GGUF, spec="mtp"),
    ]
    ids = [run.pk for run in runs]
    computed = {pk: gauge_cell(rb) for pk, rb in bounds_for_ids(ids).items()}
    assert [computed[pk].split('class="')[1].split('"')[0] for pk in ids] == [
        "bound-share",
        "muted",
        "bound-impossible",
        "bound-spec",
    ]
    with django_assert_num_queries(1):
        stored = stored_gauges(ids)
    assert {pk: gauge_cell(g) for pk, g in stored.items()} == computed

    RunBoundShare.objects.filter(run_id=ids[0]).update(digest="older", bound_title="an older catalog's")
    assert gauge_cell(stored_gauges(ids)[ids[0]]) == computed[ids[0]]


def test_a_rig_pages_outlier_notes_from_stored_shares_equal_the_computed_ones(board_run) -> None:
    """A rig page notes its runs far below their peers from the stored shares (one query,
    issue 40): the notes computing every run's bound gives, a stale share computed again,
    a speculative run never noted."""
    for i in range(10):
        board_run(rig=f"peer-{i}", gpus=[("RTX 3090", 1)], tps=[720.0 + 5 * i], run=GGUF, **DENSE)
    slow = [board_run(rig="slow-rig", gpus=[("RTX 3090", 1)], tps=[tps], run=GGUF, **DENSE) for tps in (280, 300, 700)]
    spec = board_run(rig="slow-rig", gpus=[("RTX 3090", 1)], tps=[280.0], run=GGUF, spec="mtp")
    ids = [run.pk for run in [*slow, spec]]
    pool = stored_observations()
    bounds = bounds_for_ids(ids)
    computed = [(pk, note) for pk in ids if (note := outlier_note(bounds[pk], peer_estimate(bounds[pk], pool)))]
    assert [pk for pk, _ in computed] == ids[:2]

    assert rig_outliers(ids)["bound_outliers"] == computed
    RunBoundShare.objects.filter(run_id=ids[0]).update(digest="older", bound_tokens_per_s=1.0)
    assert rig_outliers(ids)["bound_outliers"] == computed


def _gpu_page_runs(board_run) -> None:
    for i in range(3):
        board_run(rig=f"e-{i}", gpus=[("RTX 3090", 1)], tps=[300.0 + 50 * i], run=GGUF, **DENSE)
    board_run(rig="e-vllm", gpus=[("RTX 3090", 2)], engine="vllm", tps=[500.0], run=GGUF, **DENSE)
    board_run(rig="e-spec", gpus=[("RTX 3090", 1)], tps=[400.0], run=GGUF, **{**DENSE, "spec": "mtp"})


def test_a_stored_share_carries_its_runs_engine_and_speculation(board_run) -> None:
    _gpu_page_runs(board_run)
    stored = {row.run_id: (row.engine, row.speculative) for row in RunBoundShare.objects.all()}
    computed = {pk: (rb.facts.engine, rb.facts.speculative) for pk, rb in bounds_for_ids(stored).items()}
    assert stored == computed
    assert sorted(stored.values()) == [("llama.cpp", False)] * 3 + [("llama.cpp", True), ("vllm", False)]


def test_the_migration_fills_the_engine_and_speculation_of_older_shares(board_run) -> None:
    import importlib

    from django.apps import apps

    _gpu_page_runs(board_run)
    expected = {row.run_id: (row.engine, row.speculative) for row in RunBoundShare.objects.all()}
    RunBoundShare.objects.update(engine="", speculative=False)  # as migration 0017 found them
    importlib.import_module("leaderboard.results.migrations.0017_run_bound_share_engine").fill(apps, None)
    assert {row.run_id: (row.engine, row.speculative) for row in RunBoundShare.objects.all()} == expected


def test_a_gpu_pages_shares_are_read_from_the_share_table_alone(board_run) -> None:
    """The shares query joins the latest runs to their share rows alone (issue 40): it
    joined 5,000 runs to their configuration, stack and share, ~67 ms at 200k runs, and
    then sent 5,000 ids back as parameters (~30 ms of CPU a request at 10M runs)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from leaderboard.boards.bound_views import stored_share_summaries

    _gpu_page_runs(board_run)
    with CaptureQueriesContext(connection) as queries:
        summaries, capped = stored_share_summaries(Run.objects.filter(rig__gpus__model="RTX 3090").distinct())
    assert [(s.label, s.n) for s in summaries] == [("llama.cpp", 3), ("vllm", 1)] and not capped
    (shares_sql,) = [q["sql"] for q in queries.captured_queries]
    joined = re.findall(r'JOIN "(\w+)"', shares_sql)
    assert "results_runboundshare" in joined and not {"results_configuration", "results_stack"} & set(joined), joined
    assert '"created_at" DESC' in shares_sql and "LIMIT 5001" in shares_sql, shares_sql


@pytest.mark.django_db(transaction=True)
def test_the_kept_peer_pool_is_reused_until_a_run_is_written(board_run) -> None:
    """Every run page reads the same peer pool, so it is kept until the data changes
    (core.datacache): outside a transaction a second read costs no query of the pool, and
    a run committed since is in the next one."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from leaderboard.results.hardware.selectors import public_observations

    for i in range(2):
        board_run(rig=f"kept-{i}", gpus=[("RTX 3090", 1)], tps=[300.0 + 50 * i], run=GGUF, **DENSE)
    first = stored_observations()
    with CaptureQueriesContext(connection) as queries:
        assert stored_observations() == first
    assert not [q for q in queries.captured_queries if "runboundshare" in q["sql"].lower()], queries.captured_queries
    board_run(rig="kept-new", gpus=[("RTX 3090", 1)], tps=[420.0], run=GGUF, **DENSE)
    after = stored_observations()
    assert len(after) == len(first) + 1 == len(public_observations())

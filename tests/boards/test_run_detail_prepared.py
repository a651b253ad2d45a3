"""The run page's read of its run binds on the server (speedups/cursor.server_bound), so
PostgreSQL plans its nine-table select once per connection: the run it reads equals the
plain, client-bound read's, relations and prefetched rows included; what is hidden stays
hidden; the block hands the connection back client-bound, also when it raises."""

from __future__ import annotations

import contextlib

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.forms.models import model_to_dict

from leaderboard.boards.selectors import runs as run_selectors
from leaderboard.boards.selectors.runs import run_detail
from leaderboard.results.models import ReviewStatus, Rig, Run
from leaderboard.results.speedups.cursor import server_bound

pytestmark = pytest.mark.django_db

SWEEP = [{"ctx_label": "4K", "ctx_tokens": 4096, "decode_tokens_per_s": 90.0}, {"ctx_label": "198K"}]


def everything(run: Run | None) -> dict:
    """The run as its page reads it: its fields, its related rows and its prefetched lists."""
    assert run is not None
    related = ("rig", "stack", "model_file", "configuration", "workload", "source")
    return {
        "run": model_to_dict(run),
        **{name: model_to_dict(obj) if (obj := getattr(run, name)) else None for name in related},
        "share": model_to_dict(run.bound_share),
        "gpus": [model_to_dict(g) for g in run.rig.gpus.all()],
        "samples": [model_to_dict(s) for s in run.samples.all()],
        "sweep": [model_to_dict(p) for p in run.sweep_points.all()],
    }


def plain_detail(**kwargs) -> Run | None:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(run_selectors, "server_bound", contextlib.nullcontext)
        return run_detail(**kwargs)


def test_the_comparison_can_tell_two_runs_apart(board_run) -> None:
    one, other = board_run(rig="a", tps=[90.0, 91.0]), board_run(rig="b", tps=[90.0, 92.0])

    assert everything(run_detail(run_id=one.pk)) != everything(run_detail(run_id=other.pk))


def test_the_server_bound_read_equals_the_plain_one(board_run, reported_run) -> None:
    measured = board_run(rig="mixed", gpus=[("RTX 3090", 2), ("RTX 4090", 1)], sweep=SWEEP)
    reported = reported_run(decode=42.0)

    for run in (measured, reported):
        fast, plain = run_detail(run_id=run.pk), plain_detail(run_id=run.pk)
        assert everything(fast) == everything(plain)
    # The cases the set was made for are in it, so agreeing means something.
    read = everything(run_detail(run_id=measured.pk))
    assert len(read["gpus"]) == 2 and len(read["sweep"]) == 2 and len(read["samples"]) == 3
    assert everything(run_detail(run_id=reported.pk))["source"] is not None


def test_a_hidden_rigs_run_stays_hidden(board_run) -> None:
    owner = get_user_model().objects.create_user("owner", password="pw-not-used-9")
    run = board_run(rig="pending-rig")
    Rig.objects.filter(pk=run.rig_id).update(review_status=ReviewStatus.PENDING, owner=owner)

    assert run_detail(run_id=run.pk) is None and plain_detail(run_id=run.pk) is None
    assert everything(run_detail(run_id=run.pk, viewer=owner)) == everything(plain_detail(run_id=run.pk, viewer=owner))


def test_the_read_is_prepared_after_the_threshold(board_run) -> None:
    run = board_run(rig="a")
    threshold = connection.settings_dict["OPTIONS"]["prepare_threshold"]
    for _ in range(threshold + 1):
        run_detail(run_id=run.pk)

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_prepared_statements WHERE statement LIKE %s",
            ['%FROM "results_run" INNER JOIN%"results_run"."id" = $%'],
        )
        assert cursor.fetchone()[0] == 1


def test_the_block_hands_the_connection_back_client_bound() -> None:
    connection.ensure_connection()
    client_bound = connection.connection.cursor_factory
    with pytest.raises(RuntimeError), server_bound():
        assert connection.connection.cursor_factory is not client_bound
        raise RuntimeError("a read failed")

    assert connection.connection.cursor_factory is client_bound

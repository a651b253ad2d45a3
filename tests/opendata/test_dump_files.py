"""Dumps are written atomically, pruned, scheduled nightly, and served at /data/."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from django.test.utils import override_settings
from django_celery_beat.models import PeriodicTask

from leaderboard.celery import app
from leaderboard.opendata.schema import Column, Kind, Table
from leaderboard.opendata.services import board_dump
from leaderboard.opendata.tables import RUNS, _portable
from leaderboard.opendata.tasks import DUMP_TASK
from leaderboard.opendata.writer import LATEST, dump_names, dump_write
from leaderboard.results.models import Run, Source
from tests.opendata.conftest import Board

pytestmark = pytest.mark.django_db


def test_old_dumps_are_pruned_and_latest_names_the_newest(board: Board, tmp_path: Path) -> None:
    made = [board_dump(root=tmp_path, keep=2).name for _ in range(3)]

    assert dump_names(tmp_path) == made[1:]
    assert (tmp_path / LATEST).read_text().strip() == made[-1]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_a_dump_that_fails_leaves_the_previous_one_and_no_partial_files(board: Board, tmp_path: Path) -> None:
    before = board_dump(root=tmp_path, keep=2)

    def broken_rows() -> object:
        raise RuntimeError("the database went away")

    broken = Table("broken", "fails", (Column("run_id", Kind.INT, "…"),), queryset=broken_rows)
    with pytest.raises(RuntimeError):
        dump_write(root=tmp_path, tables=[RUNS, broken], datacard=lambda *a: "", keep=2)

    assert dump_names(tmp_path) == [before.name]
    assert (tmp_path / LATEST).read_text().strip() == before.name
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_a_campaigns_parameters_keep_a_paths_file_name_only() -> None:
    params = {"model": "/root/.cache/rigboard-tests/models/gemma-3-270m.gguf", "threads": 2, "draft": ["C:\\m\\d.gguf"]}

    assert _portable(params) == {"model": "gemma-3-270m.gguf", "threads": 2, "draft": ["d.gguf"]}


def test_the_command_writes_a_dump_and_refuses_keeping_none(board: Board, tmp_path: Path, capsys) -> None:
    call_command("dump_board", "--dir", str(tmp_path), "--keep", "1")

    assert len(dump_names(tmp_path)) == 1
    assert "runs 4" in capsys.readouterr().out
    with pytest.raises(CommandError, match="--keep"):
        call_command("dump_board", "--dir", str(tmp_path), "--keep", "0")


def test_the_dump_is_scheduled_nightly_on_a_task_celery_knows() -> None:
    task = PeriodicTask.objects.get(name="nightly open-data dump")

    assert task.task == DUMP_TASK and task.enabled
    assert (task.crontab.minute, task.crontab.hour) == ("0", "4")
    app.loader.import_default_modules()
    assert DUMP_TASK in app.tasks


def test_the_data_page_without_a_dump_says_how_to_make_one(client: Client, tmp_path: Path) -> None:
    with override_settings(RIGBOARD_DUMP_DIR=tmp_path / "none"):
        response = client.get("/data/")

    assert response.status_code == 200
    assert "manage.py dump_board" in response.text
    assert "decode_tokens_per_s_mean" in response.text  # the data card's columns


def test_the_data_page_lists_the_latest_dump_and_serves_its_files(client: Client, board: Board, tmp_path: Path) -> None:
    with override_settings(RIGBOARD_DUMP_DIR=tmp_path):
        dump = board_dump(keep=2)
        page = client.get("/data/").text
        latest = client.get("/data/files/latest/runs.csv")
        named = client.get(f"/data/files/{dump.name}/manifest.json")
        refused = [client.get(f"/data/files/{name}/{file}").status_code for name, file in (
            ("latest", LATEST), ("latest", "..%2F..%2Fsettings.py"), ("nope", "runs.csv"), (dump.name, "x.parquet")
        )]  # fmt: skip

    assert dump.name in page and "runs.parquet" in page
    for entry in dump.files:
        assert entry.sha256 in page
    assert latest.status_code == 200
    assert b"".join(latest.streaming_content) == (dump.path / "runs.csv").read_bytes()
    assert named.status_code == 200
    assert refused == [404, 404, 404, 404]


def test_the_data_card_gives_each_imported_sources_licence(client: Client, board: Board, tmp_path: Path) -> None:
    source = Source.objects.create(
        key="community:geerlingguy-ai-benchmarks", title="geerlingguy/ai-benchmarks", url="https://example.org/g"
    )
    Run.objects.filter(pk=board.public_runs[1].pk).update(source=source, provenance="reported")

    dump = board_dump(root=tmp_path, keep=1)
    card = (dump.path / "DATACARD.md").read_text()
    page = client.get("/data/").text

    # The licence as sources.json states it (an independent read of the file).
    import json

    from leaderboard.results.services.community import MANIFEST

    stated = {s["key"]: s["license"] for s in json.loads(MANIFEST.read_text())["sets"]}
    assert f"| {stated['geerlingguy-ai-benchmarks']} |" in card
    assert stated["geerlingguy-ai-benchmarks"] in page
    assert "not stated (an article" in card  # the article the reported run cites


def test_a_dump_outside_any_transaction_reads_one_snapshot(transactional_db, board_run, tmp_path: Path) -> None:
    """As the command and the nightly task run it: its own read-only REPEATABLE READ
    transaction on PostgreSQL (set first thing, or PostgreSQL refuses it)."""
    run = board_run(tps=[10.0, 11.0, 12.0])

    dump = board_dump(root=tmp_path, keep=1)

    assert dump.row_counts["runs"] == 1 and dump.row_counts["repetitions"] == 3
    assert Run.objects.filter(pk=run.pk).exists()

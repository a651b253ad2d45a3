"""A 2xx is not "delivered" unless the answer shows the run stored: the runner
keeps its spool copy of a run the service answered still open, or without some
of its samples, and the next flush sends it again. ``flush`` exits non-zero
when it quarantined or could not deliver something. Against a scripted service
(tests/fixtures/delivery.py); the real service's answers are in
tests/results/test_api_runs_race.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from runners.cli import main
from runners.delivery.client import ServiceClient
from runners.delivery.live import LiveRun
from runners.delivery.stored import stored_shortfall
from tests.fixtures.delivery import TOKEN, ScriptedService, whole_run


def test_a_run_answered_200_but_still_running_stays_spooled_until_it_is_stored(
    service: ScriptedService, service_client: ServiceClient
) -> None:
    run = whole_run("0e8a56f4-3b7a-4f55-9d1c-3f1b7a1d2c01", 3)
    # What the service answered a finished run that lost the race with its own open.
    service.answers = [(200, {"uuid": run["uuid"], "status": "running", "samples": []})]

    delivery = service_client.post_run(run)

    assert delivery.outcome == "spooled" and delivery.status_code == 200
    assert "still holds the run as running" in delivery.detail
    assert service_client.spooled() == [run["uuid"]]
    flushed = service_client.flush()  # the service now stores it whole (its answer shows it)
    assert flushed.posted == [run["uuid"]] and service_client.spooled() == []


def test_a_finish_answered_without_all_its_samples_spools_the_whole_run(
    service: ScriptedService, live_run: LiveRun
) -> None:
    run_uuid = live_run.run_uuid
    service.answers = [(201, {"status": "running"}), (200, {"status": "finished", "samples": [{"index": 1}]})]
    live_run.open({"uuid": run_uuid})

    delivery = live_run.close(whole_run(run_uuid, 3))

    assert delivery.outcome == "spooled" and "without samples [2, 3]" in delivery.detail
    assert live_run.client is not None and live_run.client.spooled() == [run_uuid]


def test_a_run_the_service_ended_its_own_way_is_its_account_not_a_shortfall() -> None:
    run = whole_run("5d7a0c55-0b8e-4d0f-8f53-2b9d6f4f8e11", 2)
    assert stored_shortfall(run, {"status": "aborted", "samples": []}) == ""  # its job was aborted
    assert stored_shortfall(run, {"status": "finished", "samples": run["samples"], "sweep_points": []}) == ""
    assert stored_shortfall(run, {"status": "finished", "samples": run["samples"][:1]}) != ""


@pytest.mark.parametrize("what", ["quarantined", "left for another rig"])
def test_flush_exits_non_zero_when_it_quarantined_or_could_not_deliver_something(
    service: ScriptedService, tmp_path: Path, capsys: pytest.CaptureFixture[str], what: str
) -> None:
    spool = tmp_path / "spool"
    spool.mkdir()
    if what == "quarantined":
        (spool / "cut-short.json").write_text('{"uuid": "a run cut short')
    else:
        (spool / "other.json").write_text('{"uuid": "6b0d2f2a-6c55-4d8e-a9a4-1b1e2f3a4b5c", "rig": "box-gpu"}')
        service.answers = [(403, {"errors": {"detail": ["This token belongs to rig 'box-cpu'"]}})]

    code = main(["flush", "--url", service.url, "--token", TOKEN, "--rig", "box-cpu", "--spool-dir", str(spool)])

    assert code == 1, capsys.readouterr()
    if what == "quarantined":
        assert (spool / "quarantine" / "cut-short.json").is_file()
    else:
        assert (spool / "other.json").is_file() and not (spool / "rejected").exists()

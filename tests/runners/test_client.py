"""Delivery: the client against a small real HTTP server started in the test
(tests/fixtures/delivery.py).

The service itself is exercised end to end in test_llama_e2e.py and
test_llama_live_run.py; here the server's answers are scripted to reach every
branch (5xx, 4xx, down)."""

from __future__ import annotations

import json
import time
from pathlib import Path

from runners.delivery.client import ServiceClient
from runners.delivery.live import LiveRun
from tests.fixtures.delivery import ScriptedService, down_client, run_json, sample, whole_run


def test_it_posts_with_the_token_and_the_runs_uuid(
    service: ScriptedService, service_client: ServiceClient, tmp_path: Path
) -> None:
    run = run_json()
    delivery = service_client.post_run(run)
    assert delivery.outcome == "posted" and delivery.status_code == 201
    assert service.requests == [{"path": "/api/runs/", "auth": "Token rb_secret", "body": run}]
    assert list(tmp_path.iterdir()) == []


def test_it_spools_on_5xx_and_flush_reposts_it(
    service: ScriptedService, service_client: ServiceClient, tmp_path: Path
) -> None:
    run = run_json()
    service.answers = [(503, {"detail": "maintenance"})]
    delivery = service_client.post_run(run)
    assert delivery.outcome == "spooled" and delivery.status_code == 503
    assert json.loads((service_client.spool_dir / f"{run['uuid']}.json").read_text()) == run
    assert service_client.spooled() == [run["uuid"]]

    result = service_client.flush()
    assert result.posted == [run["uuid"]] and result.remaining == []
    assert [r["body"]["uuid"] for r in service.requests] == [run["uuid"], run["uuid"]]
    assert service_client.spooled() == []


def test_it_spools_when_the_service_is_down(tmp_path: Path) -> None:
    client = down_client(tmp_path)
    run = run_json()
    delivery = client.post_run(run)
    assert delivery.outcome == "spooled"
    assert "service unreachable" in delivery.detail
    assert client.spooled() == [run["uuid"]]
    flushed = client.flush()
    assert flushed.posted == [] and flushed.remaining == [run["uuid"]]
    assert client.spooled() == [run["uuid"]]


def test_it_keeps_a_rejected_run_with_the_error_and_does_not_retry_it(
    service: ScriptedService, service_client: ServiceClient, tmp_path: Path
) -> None:
    run = run_json()
    service.answers = [(400, {"errors": {"samples.0.draft_n_accepted": ["must not exceed draft_n"]}})]
    delivery = service_client.post_run(run)
    assert delivery.outcome == "rejected" and delivery.status_code == 400
    kept = json.loads((service_client.rejected_dir / f"{run['uuid']}.json").read_text())
    assert kept["payload"] == run
    assert kept["status_code"] == 400
    assert "samples.0.draft_n_accepted" in kept["error"]
    assert service_client.spooled() == []
    assert service_client.flush().posted == []
    assert len(service.requests) == 1


def test_flush_moves_a_run_the_service_now_rejects(
    service: ScriptedService, service_client: ServiceClient, tmp_path: Path
) -> None:
    first, second = run_json(), run_json()
    service.answers = [(502, {}), (502, {})]
    service_client.post_run(first)
    service_client.post_run(second)
    service.answers = [(409, {"errors": {"uuid": ["belongs to another rig"]}}), (201, None)]
    result = service_client.flush()
    assert result.rejected == [first["uuid"]]
    assert result.posted == [second["uuid"]]
    assert (service_client.rejected_dir / f"{first['uuid']}.json").is_file()
    assert service_client.spooled() == []


def test_flush_stops_at_the_first_run_that_still_cannot_be_delivered(
    service: ScriptedService, service_client: ServiceClient
) -> None:
    runs = [run_json() for _ in range(3)]
    service.answers = [(500, {})] * 3
    for run in runs:
        service_client.post_run(run)
    service.answers = [(201, None), (503, {})]
    result = service_client.flush()
    assert len(result.posted) == 1
    assert len(result.remaining) == 2
    assert len(service_client.spooled()) == 2
    assert len(service.requests) == 3 + 2


def test_a_live_run_is_opened_extended_and_finished_and_a_failed_append_is_sent_again(
    service: ScriptedService, live_run: LiveRun, tmp_path: Path
) -> None:
    run_uuid = live_run.run_uuid
    service.answers = [(201, {"status": "running"}), (200, {}), (503, {}), (200, {}), (200, None)]
    live_run.open({"uuid": run_uuid, "rig": "test-rig", "status": "finished", "samples": [sample(9)]})
    for index in (1, 2, 3):
        live_run.add(samples=[sample(index)])
    delivery = live_run.close(whole_run(run_uuid, 3))

    assert (delivery.outcome, delivery.status_code) == ("posted", 200)
    assert [r["path"] for r in service.requests] == [
        "/api/runs/",
        f"/api/runs/{run_uuid}/samples/",
        f"/api/runs/{run_uuid}/samples/",
        f"/api/runs/{run_uuid}/samples/",
        f"/api/runs/{run_uuid}/finish/",
    ]
    opened, first, failed, again, finish = (r["body"] for r in service.requests)
    assert opened == {"uuid": run_uuid, "rig": "test-rig", "status": "running", "samples": [], "sweep_points": []}
    assert first["samples"] == [sample(1)]
    assert failed["samples"] == [sample(2)]
    assert again["samples"] == [sample(2), sample(3)]  # what the 503 lost goes with the next one
    assert finish == {k: v for k, v in whole_run(run_uuid, 3).items() if k not in ("uuid", "rig")}
    assert live_run.opened and live_run.appends_failed == 1 and list(tmp_path.iterdir()) == []


def test_a_finish_the_service_cannot_take_spools_the_whole_run(
    service: ScriptedService, live_run: LiveRun, tmp_path: Path
) -> None:
    run_uuid = live_run.run_uuid
    service.answers = [(201, {"status": "running"}), (502, {})]
    live_run.open({"uuid": run_uuid})
    delivery = live_run.close(whole_run(run_uuid, 2, status="failed"))
    assert delivery.outcome == "spooled" and delivery.status_code == 502
    spooled = live_run.client.spool_dir / f"{run_uuid}.json"
    assert json.loads(spooled.read_text()) == whole_run(run_uuid, 2, status="failed")
    assert len(service.requests) == 2


def test_an_open_that_found_the_service_down_is_tried_again_with_the_samples_so_far(
    service: ScriptedService, live_run: LiveRun
) -> None:
    run_uuid = live_run.run_uuid
    service.answers = [(503, {}), (201, {"status": "running"}), (200, {}), (200, None)]
    live_run.open({"uuid": run_uuid})
    assert not live_run.opened
    live_run.add(samples=[sample(1)])
    assert live_run.opened
    live_run.add(samples=[sample(2)])
    assert live_run.close(whole_run(run_uuid, 2)).outcome == "posted"
    paths = [r["path"] for r in service.requests]
    assert paths == ["/api/runs/", "/api/runs/", f"/api/runs/{run_uuid}/samples/", f"/api/runs/{run_uuid}/finish/"]
    assert service.requests[1]["body"]["samples"] == [sample(1)] and service.requests[1]["body"]["status"] == "running"
    assert service.requests[2]["body"]["samples"] == [sample(2)]


def test_a_run_the_service_closed_says_why_and_is_sent_nothing_more(
    service: ScriptedService, service_client: ServiceClient, live_run: LiveRun
) -> None:
    run_uuid = live_run.run_uuid
    service.close_after_open(run_uuid)  # its job was aborted meanwhile
    live_run.open({"uuid": run_uuid})
    live_run.add(samples=[sample(1)])
    ended = live_run.ended
    assert ended is not None and (ended.status, ended.reason) == ("aborted", "aborted by ops")
    assert str(ended) == "the service ended the run as aborted: aborted by ops"
    live_run.add(samples=[sample(2)])
    delivery = live_run.close(whole_run(run_uuid, 2))
    assert (delivery.outcome, delivery.status_code) == ("closed_on_service", 409)
    assert "ended the run as aborted: aborted by ops; it keeps the samples it had" in delivery.detail
    assert [r["path"] for r in service.requests] == [
        "/api/runs/",
        f"/api/runs/{run_uuid}/samples/",
        f"/api/runs/{run_uuid}/",  # the GET that asked why
    ]
    assert service_client.spooled() == [] and live_run.opened


def test_a_closed_run_the_service_will_not_describe_is_taken_as_aborted(
    service: ScriptedService, live_run: LiveRun
) -> None:
    run_uuid = live_run.run_uuid
    service.answers = [(201, {"status": "running"}), (409, {"errors": {"status": ["run is failed, not running"]}})]
    live_run.open({"uuid": run_uuid})
    live_run.add(samples=[sample(1)])  # the GET answers 404
    assert live_run.ended is not None and live_run.ended.status == "aborted"
    assert "HTTP 409" in live_run.ended.reason and live_run.close(whole_run(run_uuid, 1)).outcome == "closed_on_service"


def test_a_finish_refused_because_the_service_closed_the_run_sends_nothing_more(
    service: ScriptedService, service_client: ServiceClient, live_run: LiveRun
) -> None:
    run_uuid = live_run.run_uuid
    service.close_after_open(run_uuid)
    live_run.open({"uuid": run_uuid})
    delivery = live_run.close(whole_run(run_uuid, 2))
    assert delivery.outcome == "closed_on_service" and "ended the run as aborted: aborted by ops" in delivery.detail
    paths = [r["path"] for r in service.requests]
    assert paths == ["/api/runs/", f"/api/runs/{run_uuid}/finish/", f"/api/runs/{run_uuid}/"]  # no whole POST
    assert service_client.spooled() == [] and not service_client.rejected_dir.exists()


def test_an_open_that_finds_the_run_ended_stops_it(service: ScriptedService, live_run: LiveRun) -> None:
    run_uuid = live_run.run_uuid
    service.answers = [(200, {"status": "aborted", "failure_reason": "aborted by ops"})]
    live_run.open({"uuid": run_uuid})
    assert not live_run.opened and live_run.ended is not None
    assert str(live_run.ended) == "the service ended the run as aborted: aborted by ops"
    live_run.add(samples=[sample(1)])
    assert live_run.close(whole_run(run_uuid, 1)).outcome == "closed_on_service" and len(service.requests) == 1


def test_with_no_time_left_before_the_limit_the_run_goes_straight_to_the_spool(
    service: ScriptedService, service_client: ServiceClient, live_run: LiveRun
) -> None:
    run_uuid = live_run.run_uuid
    service.answers = [(201, {"status": "running"})]
    live_run.open({"uuid": run_uuid})
    delivery = live_run.close(whole_run(run_uuid, 1), deliver_by=time.monotonic() + 0.5)
    assert delivery.outcome == "spooled" and "no time left" in delivery.detail
    assert service_client.spooled() == [run_uuid] and len(service.requests) == 1

"""Delivery: the client against a small real HTTP server started in the test.

The service itself is exercised end to end in test_llama_e2e.py and
test_llama_live_run.py; here the server's answers are scripted to reach every
branch (5xx, 4xx, down)."""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from runners.delivery.client import LiveRun, ServiceClient
from runners.harness.server import free_port


class ScriptedService:
    """Answers POST /api/runs/ with the next scripted (status, body) and GET
    /api/runs/{uuid}/ from ``runs`` (404 for others); records each request."""

    def __init__(self) -> None:
        self.answers: list[tuple[int, dict[str, Any]]] = []
        self.requests: list[dict[str, Any]] = []
        self.runs: dict[str, dict[str, Any]] = {}
        service = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's naming
                service.requests.append({"method": "GET", "path": self.path})
                run = service.runs.get(self.path.strip("/").rsplit("/", 1)[-1])
                data = json.dumps(run or {"errors": {"detail": ["Not found."]}}).encode()
                self.send_response(200 if run else 404)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                service.requests.append({"path": self.path, "auth": self.headers["Authorization"], "body": body})
                status, answer = service.answers.pop(0) if service.answers else (201, {"uuid": body.get("uuid")})
                data = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def service() -> Iterator[ScriptedService]:
    scripted = ScriptedService()
    yield scripted
    scripted.close()


def run_json() -> dict[str, Any]:
    return {"uuid": str(uuid.uuid4()), "rig": "test-rig", "status": "finished", "samples": [{"index": 1}]}


def test_it_posts_with_the_token_and_the_runs_uuid(service: ScriptedService, tmp_path: Path) -> None:
    client = ServiceClient(service.url, "rb_secret", spool_dir=tmp_path)
    run = run_json()
    delivery = client.post_run(run)
    assert delivery.outcome == "posted" and delivery.status_code == 201
    assert service.requests == [{"path": "/api/runs/", "auth": "Token rb_secret", "body": run}]
    assert list(tmp_path.iterdir()) == []


def test_it_spools_on_5xx_and_flush_reposts_it(service: ScriptedService, tmp_path: Path) -> None:
    client = ServiceClient(service.url, "rb_secret", spool_dir=tmp_path)
    run = run_json()
    service.answers = [(503, {"detail": "maintenance"})]
    delivery = client.post_run(run)
    assert delivery.outcome == "spooled" and delivery.status_code == 503
    assert json.loads((tmp_path / f"{run['uuid']}.json").read_text()) == run
    assert client.spooled() == [run["uuid"]]

    result = client.flush()
    assert result.posted == [run["uuid"]] and result.remaining == []
    assert [r["body"]["uuid"] for r in service.requests] == [run["uuid"], run["uuid"]]
    assert client.spooled() == []


def test_it_spools_when_the_service_is_down(tmp_path: Path) -> None:
    client = ServiceClient(f"http://127.0.0.1:{free_port('127.0.0.1')}", "rb_secret", spool_dir=tmp_path, timeout_s=2)
    run = run_json()
    delivery = client.post_run(run)
    assert delivery.outcome == "spooled"
    assert "service unreachable" in delivery.detail
    assert client.spooled() == [run["uuid"]]
    flushed = client.flush()
    assert flushed.posted == [] and flushed.remaining == [run["uuid"]]
    assert client.spooled() == [run["uuid"]]


def test_it_keeps_a_rejected_run_with_the_error_and_does_not_retry_it(service: ScriptedService, tmp_path: Path) -> None:
    client = ServiceClient(service.url, "rb_secret", spool_dir=tmp_path)
    run = run_json()
    service.answers = [(400, {"errors": {"samples.0.draft_n_accepted": ["must not exceed draft_n"]}})]
    delivery = client.post_run(run)
    assert delivery.outcome == "rejected" and delivery.status_code == 400
    kept = json.loads((tmp_path / "rejected" / f"{run['uuid']}.json").read_text())
    assert kept["payload"] == run
    assert kept["status_code"] == 400
    assert "samples.0.draft_n_accepted" in kept["error"]
    assert client.spooled() == []
    assert client.flush().posted == []
    assert len(service.requests) == 1


def test_flush_moves_a_run_the_service_now_rejects(service: ScriptedService, tmp_path: Path) -> None:
    client = ServiceClient(service.url, "rb_secret", spool_dir=tmp_path)
    first, second = run_json(), run_json()
    service.answers = [(502, {}), (502, {})]
    client.post_run(first)
    client.post_run(second)
    service.answers = [(409, {"errors": {"uuid": ["belongs to another rig"]}}), (201, {})]
    result = client.flush()
    assert result.rejected == [first["uuid"]]
    assert result.posted == [second["uuid"]]
    assert (tmp_path / "rejected" / f"{first['uuid']}.json").is_file()
    assert client.spooled() == []


def test_flush_stops_at_the_first_run_that_still_cannot_be_delivered(service: ScriptedService, tmp_path: Path) -> None:
    client = ServiceClient(service.url, "rb_secret", spool_dir=tmp_path)
    runs = [run_json() for _ in range(3)]
    service.answers = [(500, {})] * 3
    for run in runs:
        client.post_run(run)
    service.answers = [(201, {}), (503, {})]
    result = client.flush()
    assert len(result.posted) == 1
    assert len(result.remaining) == 2
    assert len(client.spooled()) == 2
    assert len(service.requests) == 3 + 2


def sample(index: int) -> dict[str, Any]:
    return {"index": index, "decode_tokens_per_s_server": 50.0 + index, "tokens_generated": 16}


def whole_run(run_uuid: str, n: int, status: str = "finished") -> dict[str, Any]:
    return {
        "uuid": run_uuid,
        "rig": "test-rig",
        "status": status,
        "failure_reason": "" if status == "finished" else "repetition 3: llama-server exited",
        "server_log_tail": "srv log\n",
        "finished_at": "2026-11-21T21:04:00Z",
        "extra": {"warmups": []},
        "samples": [sample(i) for i in range(1, n + 1)],
        "sweep_points": [],
    }


def test_a_live_run_is_opened_extended_and_finished_and_a_failed_append_is_sent_again(
    service: ScriptedService, tmp_path: Path
) -> None:
    client = ServiceClient(service.url, "rb_secret", spool_dir=tmp_path)
    run_uuid = str(uuid.uuid4())
    live = LiveRun(client, run_uuid)
    service.answers = [(201, {"status": "running"}), (200, {}), (503, {}), (200, {}), (200, {"status": "finished"})]
    live.open({"uuid": run_uuid, "rig": "test-rig", "status": "finished", "samples": [sample(9)]})
    for index in (1, 2, 3):
        live.add(samples=[sample(index)])
    delivery = live.close(whole_run(run_uuid, 3))

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
    assert live.opened and live.appends_failed == 1 and list(tmp_path.iterdir()) == []


def test_a_finish_the_service_cannot_take_spools_the_whole_run(service: ScriptedService, tmp_path: Path) -> None:
    client = ServiceClient(service.url, "rb_secret", spool_dir=tmp_path)
    run_uuid = str(uuid.uuid4())
    live = LiveRun(client, run_uuid)
    service.answers = [(201, {"status": "running"}), (502, {})]
    live.open({"uuid": run_uuid})
    delivery = live.close(whole_run(run_uuid, 2, status="failed"))
    assert delivery.outcome == "spooled" and delivery.status_code == 502
    assert json.loads((tmp_path / f"{run_uuid}.json").read_text()) == whole_run(run_uuid, 2, status="failed")
    assert len(service.requests) == 2


def test_an_open_that_found_the_service_down_is_tried_again_with_the_samples_so_far(
    service: ScriptedService, tmp_path: Path
) -> None:
    client = ServiceClient(service.url, "rb_secret", spool_dir=tmp_path)
    run_uuid = str(uuid.uuid4())
    live = LiveRun(client, run_uuid)
    service.answers = [(503, {}), (201, {"status": "running"}), (200, {}), (200, {"status": "finished"})]
    live.open({"uuid": run_uuid})
    assert not live.opened
    live.add(samples=[sample(1)])
    assert live.opened
    live.add(samples=[sample(2)])
    assert live.close(whole_run(run_uuid, 2)).outcome == "posted"
    paths = [r["path"] for r in service.requests]
    assert paths == ["/api/runs/", "/api/runs/", f"/api/runs/{run_uuid}/samples/", f"/api/runs/{run_uuid}/finish/"]
    assert service.requests[1]["body"]["samples"] == [sample(1)] and service.requests[1]["body"]["status"] == "running"
    assert service.requests[2]["body"]["samples"] == [sample(2)]


def test_a_run_the_service_closed_says_why_and_is_sent_nothing_more(service: ScriptedService, tmp_path: Path) -> None:
    client = ServiceClient(service.url, "rb_secret", spool_dir=tmp_path)
    run_uuid = str(uuid.uuid4())
    live = LiveRun(client, run_uuid)
    # Its job was aborted meanwhile: the service closed the run and answers 409 to appends.
    service.answers = [(201, {"status": "running"}), (409, {"errors": {"status": ["run is aborted, not running"]}})]
    service.runs[run_uuid] = {"uuid": run_uuid, "status": "aborted", "failure_reason": "aborted by ops"}
    live.open({"uuid": run_uuid})
    live.add(samples=[sample(1)])
    assert live.ended is not None and (live.ended.status, live.ended.reason) == ("aborted", "aborted by ops")
    assert str(live.ended) == "the service ended the run as aborted: aborted by ops"
    live.add(samples=[sample(2)])
    delivery = live.close(whole_run(run_uuid, 2))
    assert (delivery.outcome, delivery.status_code) == ("closed_on_service", 409)
    assert "ended the run as aborted: aborted by ops; it keeps the samples it had" in delivery.detail
    assert [r["path"] for r in service.requests] == [
        "/api/runs/",
        f"/api/runs/{run_uuid}/samples/",
        f"/api/runs/{run_uuid}/",  # the GET that asked why
    ]
    assert client.spooled() == [] and live.opened


def test_a_closed_run_the_service_will_not_describe_is_taken_as_aborted(
    service: ScriptedService, tmp_path: Path
) -> None:
    client = ServiceClient(service.url, "rb_secret", spool_dir=tmp_path)
    run_uuid = str(uuid.uuid4())
    live = LiveRun(client, run_uuid)
    service.answers = [(201, {"status": "running"}), (409, {"errors": {"status": ["run is failed, not running"]}})]
    live.open({"uuid": run_uuid})
    live.add(samples=[sample(1)])  # the GET answers 404
    assert live.ended is not None and live.ended.status == "aborted"
    assert "HTTP 409" in live.ended.reason and live.close(whole_run(run_uuid, 1)).outcome == "closed_on_service"


def test_a_finish_refused_because_the_service_closed_the_run_sends_nothing_more(
    service: ScriptedService, tmp_path: Path
) -> None:
    client = ServiceClient(service.url, "rb_secret", spool_dir=tmp_path)
    run_uuid = str(uuid.uuid4())
    live = LiveRun(client, run_uuid)
    service.answers = [(201, {"status": "running"}), (409, {"errors": {"status": ["run is aborted, not running"]}})]
    service.runs[run_uuid] = {"uuid": run_uuid, "status": "aborted", "failure_reason": "aborted by ops"}
    live.open({"uuid": run_uuid})
    delivery = live.close(whole_run(run_uuid, 2))
    assert delivery.outcome == "closed_on_service" and "ended the run as aborted: aborted by ops" in delivery.detail
    paths = [r["path"] for r in service.requests]
    assert paths == ["/api/runs/", f"/api/runs/{run_uuid}/finish/", f"/api/runs/{run_uuid}/"]  # no whole POST
    assert client.spooled() == [] and not client.rejected_dir.exists()


def test_an_open_that_finds_the_run_ended_stops_it(service: ScriptedService, tmp_path: Path) -> None:
    client = ServiceClient(service.url, "rb_secret", spool_dir=tmp_path)
    run_uuid = str(uuid.uuid4())
    live = LiveRun(client, run_uuid)
    service.answers = [(200, {"status": "aborted", "failure_reason": "aborted by ops"})]
    live.open({"uuid": run_uuid})
    assert not live.opened and live.ended is not None
    assert str(live.ended) == "the service ended the run as aborted: aborted by ops"
    live.add(samples=[sample(1)])
    assert live.close(whole_run(run_uuid, 1)).outcome == "closed_on_service" and len(service.requests) == 1


def test_with_no_time_left_before_the_limit_the_run_goes_straight_to_the_spool(
    service: ScriptedService, tmp_path: Path
) -> None:
    client = ServiceClient(service.url, "rb_secret", spool_dir=tmp_path)
    run_uuid = str(uuid.uuid4())
    live = LiveRun(client, run_uuid)
    service.answers = [(201, {"status": "running"})]
    live.open({"uuid": run_uuid})
    delivery = live.close(whole_run(run_uuid, 1), deliver_by=time.monotonic() + 0.5)
    assert delivery.outcome == "spooled" and "no time left" in delivery.detail
    assert client.spooled() == [run_uuid] and len(service.requests) == 1

"""A run is live on the service while it is measured: opened as running once the
server is up, extended after each repetition and sweep point, closed at the
end; a service that is down at the start or at the end loses nothing.
Real llama-server + Gemma 3 270M (attached), a live Rigboard on PostgreSQL, and
between them a forwarding proxy the test switches off (503) and on."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from leaderboard.results.models import Rig, Run
from runners.delivery.client import ServiceClient
from runners.harness.server import LlamaServer
from runners.pipeline import run_job
from tests.fixtures.llama_jobs import on
from tests.fixtures.loopback import LoopbackServer, QuietHandler

pytestmark = pytest.mark.llama


class SwitchableService:
    """Forwards every request to the live Rigboard while ``up``; answers 503 while not.
    Records (method, path, status) of each request it answered."""

    def __init__(self, target: str) -> None:
        self.target = target.rstrip("/")
        self.up = True
        self.log: list[tuple[str, str, int]] = []
        proxy = self

        class Handler(QuietHandler):
            def _relay(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if proxy.up:
                    answer = requests.request(
                        self.command,
                        proxy.target + self.path,
                        data=body or None,
                        headers={k: v for k, v in self.headers.items() if k in ("Authorization", "Content-Type")},
                        timeout=60,
                    )
                    status, data = answer.status_code, answer.content
                else:
                    status, data = 503, b'{"errors": {"detail": ["down for maintenance"]}}'
                proxy.log.append((self.command, self.path, status))
                self.send_body(status, data)

            do_GET = do_POST = _relay  # noqa: N815 - http.server's naming

        self.server = LoopbackServer(Handler)
        self.url = self.server.url

    def posts(self) -> list[tuple[str, int]]:
        return [(path, status) for method, path, status in self.log if method == "POST"]

    def close(self) -> None:
        self.server.close()


@pytest.fixture
def switchable(live_server: Any) -> Iterator[SwitchableService]:
    proxy = SwitchableService(live_server.url)
    yield proxy
    proxy.close()


def attach_spec(url: str, token: str, server: LlamaServer, tmp_path: Path, **workload: Any) -> dict[str, Any]:
    return {
        "service": {"url": url, "token": token, "rig": "cpu-rig", "spool_dir": str(tmp_path / "spool")},
        "attach": {"url": server.base_url},
        "workload": {"max_tokens": 16, "repetitions": 3, "warmup": 0, "request_timeout_s": 120.0, **workload},
        "sweep": {"enabled": False},
        "run_uuid": str(uuid.uuid4()),
        "cache_dir": str(tmp_path / "cache"),
    }


def stored(live_server: Any, run_uuid: str) -> dict[str, Any]:
    """Return the run as the API gives it (what anyone watching would see)."""
    response = requests.get(f"{live_server.url}/api/runs/{run_uuid}/", timeout=10)
    assert response.status_code == 200, response.text
    return dict(response.json())


def indexes(run: dict[str, Any]) -> list[int]:
    return [s["index"] for s in run["samples"]]


def test_a_run_is_running_on_the_service_with_the_repetitions_so_far_then_finished(
    live_server: Any, cpu_rig: tuple[Rig, str], gemma_server: LlamaServer, tmp_path: Path
) -> None:
    spec = attach_spec(live_server.url, cpu_rig[1], gemma_server, tmp_path)
    spec["sweep"] = {"enabled": True, "depths": [64, 128], "decode_tokens": 8}
    spec["output_path"] = str(tmp_path / "run.json")
    run_uuid = spec["run_uuid"]
    seen: dict[str, dict[str, Any]] = {}

    def watch(stage: str, done: int, total: int) -> None:
        if (stage, done) in (("repetitions", 2), ("sweep", 1)):
            seen[f"{stage} {done}"] = stored(live_server, run_uuid)

    result = run_job(spec, progress=watch)

    during = seen["repetitions 2"]
    assert during["status"] == "running" and indexes(during) == [1, 2] and during["sweep_points"] == []
    assert during["summary"]["n_samples"] == 2 and during["finished_at"] is None
    assert during["stack"]["engine"] == "llama.cpp" and during["fingerprint"]["cpu"]
    in_sweep = seen["sweep 1"]
    assert in_sweep["status"] == "running" and indexes(in_sweep) == [1, 2, 3]
    assert [p["ctx_tokens"] for p in in_sweep["sweep_points"]] == [64]

    assert result.status == "finished", result.failure_reason
    assert (result.delivered, result.http_status, result.opened) == ("posted", 200, True)
    final = stored(live_server, run_uuid)
    assert final["status"] == "finished" and indexes(final) == [1, 2, 3]
    assert [p["ctx_tokens"] for p in final["sweep_points"]] == [64, 128]
    assert final["summary"]["n_samples"] == 3 and final["finished_at"]
    # Each sample as the runner measured it, stored once.
    measured = json.loads((tmp_path / "run.json").read_text())
    assert [(s["index"], s["tokens_generated"], s["decode_tokens_per_s_server"]) for s in final["samples"]] == [
        (s["index"], s["tokens_generated"], pytest.approx(s["decode_tokens_per_s_server"])) for s in measured["samples"]
    ]
    assert Run.objects.filter(uuid=run_uuid).count() == 1 and Run.objects.get(uuid=run_uuid).samples.count() == 3


def test_a_service_down_at_the_start_gets_the_run_once_it_is_back(
    live_server: Any, switchable: SwitchableService, cpu_rig: tuple[Rig, str], gemma_server: LlamaServer, tmp_path: Path
) -> None:
    spec = attach_spec(switchable.url, cpu_rig[1], gemma_server, tmp_path)
    run_uuid = spec["run_uuid"]
    seen: dict[str, Any] = {}
    switchable.up = False

    def progress(stage: str, done: int, total: int) -> None:
        if (stage, done) == ("repetitions", 1):
            seen["after 1"] = Run.objects.filter(uuid=run_uuid).exists()
            switchable.up = True
        if (stage, done) == ("repetitions", 2):
            seen["after 2"] = stored(live_server, run_uuid)

    result = run_job(spec, progress=progress)

    assert seen["after 1"] is False  # down: nothing could be opened yet
    # Back up: the next repetition opened the run with both samples measured so far.
    assert seen["after 2"]["status"] == "running" and indexes(seen["after 2"]) == [1, 2]
    assert result.status == "finished" and result.delivered == "posted" and result.opened
    final = stored(live_server, run_uuid)
    assert final["status"] == "finished" and indexes(final) == [1, 2, 3]
    runs = f"/api/runs/{run_uuid}/"
    assert switchable.posts() == [
        ("/api/runs/", 503),  # the open
        ("/api/runs/", 503),  # tried again after repetition 1
        ("/api/runs/", 201),  # after repetition 2, with both samples
        (runs + "samples/", 200),
        (runs + "finish/", 200),
    ]
    assert Run.objects.count() == 1 and not list((tmp_path / "spool").rglob("*.json"))


def test_a_service_down_at_the_end_gets_the_whole_run_from_the_spool_and_completes_the_open_run(
    live_server: Any, switchable: SwitchableService, cpu_rig: tuple[Rig, str], gemma_server: LlamaServer, tmp_path: Path
) -> None:
    spec = attach_spec(switchable.url, cpu_rig[1], gemma_server, tmp_path)
    spec["output_path"] = str(tmp_path / "run.json")
    run_uuid = spec["run_uuid"]
    result = run_job(spec, progress=on("repetitions", 1, lambda: setattr(switchable, "up", False)))

    assert result.status == "finished" and result.opened
    assert result.delivered == "spooled" and result.http_status == 503
    assert Path(result.spool_path) == tmp_path / "spool" / "cpu-rig" / f"{run_uuid}.json"  # the rig's own spool
    # What the service saw before it went down: the run open with its first repetition.
    half = stored(live_server, run_uuid)
    assert half["status"] == "running" and indexes(half) == [1]

    switchable.up = True
    client = ServiceClient(switchable.url, cpu_rig[1], spool_dir=tmp_path / "spool", rig="cpu-rig")
    assert client.flush().as_dict() == {"posted": [run_uuid], "rejected": [], "remaining": [], "quarantined": []}
    final = stored(live_server, run_uuid)
    assert final["status"] == "finished" and indexes(final) == [1, 2, 3]
    assert final["summary"]["n_samples"] == 3
    assert Run.objects.count() == 1 and client.spooled() == []
    # A second flush, or a repeat of the whole run, changes nothing.
    assert client.flush().posted == []
    again = client.post_run(json.loads((tmp_path / "run.json").read_text()))
    assert (again.outcome, again.status_code) == ("posted", 200)
    assert stored(live_server, run_uuid) == final and Run.objects.count() == 1


def test_a_run_the_service_closes_mid_suite_stops_after_the_repetition_in_hand_and_is_sent_nothing_more(
    live_server: Any, switchable: SwitchableService, cpu_rig: tuple[Rig, str], gemma_server: LlamaServer, tmp_path: Path
) -> None:
    from leaderboard.results.services.append import run_append

    spec = attach_spec(switchable.url, cpu_rig[1], gemma_server, tmp_path, repetitions=12)
    run_uuid = spec["run_uuid"]

    def close_on_the_service() -> None:
        # What a staff abort of the run's job does to the run (jobs.services._run_close).
        run_append(run=Run.objects.get(uuid=run_uuid), status="aborted", failure_reason="aborted by ops")

    result = run_job(spec, progress=on("repetitions", 1, close_on_the_service))

    # Repetition 2 was in hand when its append was refused: the suite stopped there, not at 12.
    assert result.status == "aborted" and result.n_samples == 2
    assert result.ended_by_service == "the service ended the run as aborted: aborted by ops"
    assert result.failure_reason == (
        "stopped: the service ended the run as aborted: aborted by ops (2 of 12 repetitions measured)"
    )
    assert (result.delivered, result.http_status) == ("closed_on_service", 409)
    final = stored(live_server, run_uuid)
    assert final["status"] == "aborted" and final["failure_reason"] == "aborted by ops" and indexes(final) == [1]
    runs = f"/api/runs/{run_uuid}/"
    # Nothing after the refused append but the one GET that asked why: no finish, no whole run, no spool.
    assert [(m, p, s) for m, p, s in switchable.log] == [
        ("POST", "/api/runs/", 201),
        ("POST", runs + "samples/", 200),
        ("POST", runs + "samples/", 409),
        ("GET", runs, 200),
    ]
    assert not list((tmp_path / "spool").rglob("*.json"))


def test_a_job_that_ended_on_the_service_stops_the_run_and_closes_it_aborted_with_its_samples(
    live_server: Any, cpu_rig: tuple[Rig, str], gemma_server: LlamaServer, tmp_path: Path
) -> None:
    from runners.delivery.live import EndedByService

    spec = attach_spec(live_server.url, cpu_rig[1], gemma_server, tmp_path, repetitions=12)
    run_uuid = spec["run_uuid"]

    def job_ended() -> None:
        # What the task's progress callback raises once a progress report on the job is refused.
        raise EndedByService("job", "aborted", "aborted by ops")

    result = run_job(spec, progress=on("repetitions", 2, job_ended))

    assert result.status == "aborted" and result.n_samples == 2
    reason = "stopped: the service ended the job as aborted: aborted by ops (2 of 12 repetitions measured)"
    assert result.failure_reason == reason
    # The service still held the run open (it only learns from the job): it is closed, not left running.
    assert (result.delivered, result.http_status) == ("posted", 200)
    final = stored(live_server, run_uuid)
    assert final["status"] == "aborted" and final["failure_reason"] == reason and indexes(final) == [1, 2]

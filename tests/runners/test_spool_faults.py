"""A spool that cannot be written, a corrupt spool file, an HTML error page, the
heartbeat: the client against real OS errors (a full or read-only filesystem, a
file-size limit) and a small real HTTP server scripted in the test. The whole
runner against the same faults is in test_llama_faults.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import uuid
from pathlib import Path

import pytest
import requests

from runners.delivery import live as live_module
from runners.delivery.client import ServiceClient, answer_text
from runners.delivery.live import LiveRun
from tests.fixtures.delivery import TOKEN, ScriptedService, down_client, run_json, whole_run
from tests.fixtures.loopback import LoopbackServer, QuietHandler
from tests.fixtures.waiting import wait_until
from tests.runners.unwritable import full_dir, read_only_dir

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def fallback(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    place = tmp_path / "fallback"
    monkeypatch.setenv("RIGBOARD_SPOOL_FALLBACK_DIRS", str(place))
    return place


def big_run() -> dict:
    run = run_json()
    run["server_log_tail"] = "x" * 64 * 1024  # more than the full filesystem had room for
    return run


def test_a_full_spool_sends_the_run_to_the_fallback_and_leaves_no_temp_file(tmp_path: Path, fallback: Path) -> None:
    with full_dir(tmp_path / "spool") as spool:
        client = down_client(spool)
        run = big_run()
        delivery = client.post_run(run)
        assert delivery.outcome == "spooled"
        assert "No space left on device" in delivery.fallback and str(spool) in delivery.fallback
        assert Path(delivery.path) == fallback / client.spool_key / f"{run['uuid']}.json"  # the rig's own
        assert json.loads(Path(delivery.path).read_text()) == run
        assert [p.name for p in spool.rglob("*") if p.is_file()] == ["filler"]  # no truncated temp file
        assert client.spooled() == [run["uuid"]]


def test_a_read_only_spool_sends_the_run_to_the_fallback_and_flush_delivers_it(
    service: ScriptedService, tmp_path: Path, fallback: Path
) -> None:
    with read_only_dir(tmp_path / "spool") as spool:
        run = run_json()
        client = down_client(spool)
        delivery = client.post_run(run)
        assert delivery.outcome == "spooled" and Path(delivery.path).parent == fallback / client.spool_key
        assert str(spool) in delivery.fallback
        assert list(spool.iterdir()) == []
        flushed = ServiceClient(service.url, TOKEN, spool_dir=spool).flush()
        assert flushed.posted == [run["uuid"]] and flushed.remaining == []
        assert service.requests[-1]["body"] == run
        assert list(fallback.rglob("*.json")) == []


def test_a_run_no_directory_takes_is_unsaved_and_no_temp_file_is_left(tmp_path: Path) -> None:
    """RLIMIT_FSIZE makes every write past 4 KiB fail with EFBIG (a real OS error,
    in a subprocess so the limit stays there); spool and fallback both refuse."""
    script = f"""
import json, resource, sys
sys.path.insert(0, {str(ROOT)!r})
resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
from runners.delivery.client import ServiceClient
from runners.harness.server import free_port
url = f"http://127.0.0.1:{{free_port('127.0.0.1')}}"
client = ServiceClient(url, "t", spool_dir={str(tmp_path / "spool")!r}, timeout_s=2)
run = {{"uuid": "7d1f1f9e-0000-4000-8000-000000000001", "status": "finished", "log": "x" * 20000}}
d = client.post_run(run)
print(json.dumps({{"outcome": d.outcome, "fallback": d.fallback, "detail": d.detail}}))
"""
    env = {**os.environ, "RIGBOARD_SPOOL_FALLBACK_DIRS": str(tmp_path / "fallback")}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout.strip().splitlines()[-1])
    assert answer["outcome"] == "unsaved"
    assert "File too large" in answer["fallback"] and str(tmp_path / "fallback") in answer["fallback"]
    assert "could not be written anywhere" in answer["detail"]
    left = [p.name for p in tmp_path.rglob("*") if p.is_file()]
    assert left == []


def test_a_corrupt_spool_file_is_quarantined_and_the_flush_carries_on(
    service: ScriptedService, tmp_path: Path, fallback: Path
) -> None:
    spool = tmp_path / "spool"
    good = run_json()
    down_client(spool).post_run(good)
    corrupt = spool / f"{uuid.uuid4()}.json"
    corrupt.write_text('{"uuid": "cut', encoding="utf-8")
    not_a_run = spool / f"{uuid.uuid4()}.json"
    not_a_run.write_text("[1, 2]")
    os.utime(corrupt, (0, 0))  # the oldest: it comes first
    result = ServiceClient(service.url, TOKEN, spool_dir=spool).flush()
    assert result.posted == [good["uuid"]]
    quarantined = dict(line.split(": ", 1) for line in result.quarantined)
    assert quarantined[str(spool / "quarantine" / corrupt.name)].startswith("not valid JSON")
    assert quarantined[str(spool / "quarantine" / not_a_run.name)] == "not a run (a JSON object with a uuid)"
    assert sorted(p.name for p in (spool / "quarantine").iterdir()) == sorted([corrupt.name, not_a_run.name])
    assert list(spool.glob("*.json")) == []


def test_an_html_error_page_is_summed_up_in_one_line(tmp_path: Path) -> None:
    resp = requests.Response()
    resp.status_code = 500
    resp.headers["Content-Type"] = "text/html; charset=utf-8"
    page = b"<!DOCTYPE html><html><head>\n<title>OperationalError\n at /api/runs/</title></head>"
    resp._content = page + b"<p>x" * 5000
    assert answer_text(resp) == "an HTML page (OperationalError at /api/runs/)"


def test_an_html_5xx_from_the_service_is_one_line_in_the_delivery(tmp_path: Path) -> None:
    class Handler(QuietHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's naming
            self.rfile.read(int(self.headers["Content-Length"]))
            page = b"<html><head><title>502 Bad Gateway</title></head><body>" + b"<hr>" * 2000 + b"</body></html>"
            self.send_body(502, page, "text/html")

    with LoopbackServer(Handler) as proxy:
        delivery = ServiceClient(proxy.url, "t", spool_dir=tmp_path).post_run(run_json())
    assert delivery.outcome == "spooled"
    assert delivery.detail == "HTTP 502: an HTML page (502 Bad Gateway)"


def test_an_open_run_gets_a_heartbeat_while_nothing_else_is_sent(
    service: ScriptedService, live_run: LiveRun, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(live_module, "HEARTBEAT_S", 0.3)
    service.answers = [(201, {"status": "running"})]
    live_run.open({"uuid": live_run.run_uuid})

    def beats() -> list[dict]:
        return [r for r in service.requests if r["path"].endswith("/samples/")]

    wait_until(lambda: len(beats()) >= 2, 30, "two heartbeats")
    live_run.close(whole_run(live_run.run_uuid, 1))
    assert all(r["body"] == {"samples": [], "sweep_points": []} for r in beats())
    # None after the close: the heartbeat's thread has ended, so nothing more can be sent.
    assert not [t for t in threading.enumerate() if t.name == f"heartbeat-{live_run.run_uuid}"]

"""Two rigs on one host (a GPU instance and a CPU instance side by side), each
with its own config and token and the same spool root and fallbacks: a flush
delivers its own rig's runs only and never moves another rig's run anywhere.
Against a live Rigboard on PostgreSQL, so the 403 is the service's own."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from leaderboard.results.models import Run
from runners.cli import main
from runners.config import RigConfig
from runners.delivery.client import ServiceClient
from runners.harness.server import free_port
from runners.pipeline import client_for
from tests.fixtures.api import api_run_payload

pytestmark = pytest.mark.django_db(transaction=True)


def _client(url: str, token: str, rig: str, spool: Path) -> ServiceClient:
    """The client `python -m runners run` makes from a rig's config."""
    service = {"url": url, "token": token, "rig": rig, "spool_dir": str(spool)}
    client = client_for(RigConfig.from_mapping({"service": service, "attach": {"url": "http://unused"}}))
    assert client is not None
    return client


def _files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.json") if p.is_file())


def test_a_flush_delivers_its_own_rigs_runs_and_leaves_the_other_rigs_alone(
    live_server: Any, make_rig_with_token: Any, tmp_path: Path
) -> None:
    gpu, cpu = make_rig_with_token("box-gpu"), make_rig_with_token("box-cpu")
    spool = tmp_path / "spool"  # one spool root for both, as the default is
    down = f"http://127.0.0.1:{free_port('127.0.0.1')}"
    gpu_run, cpu_run = api_run_payload(rig="box-gpu"), api_run_payload(rig="box-cpu")
    assert _client(down, gpu.raw, "box-gpu", spool).post_run(gpu_run).outcome == "spooled"
    assert _client(down, cpu.raw, "box-cpu", spool).post_run(cpu_run).outcome == "spooled"

    cpu_flush = _client(live_server.url, cpu.raw, "box-cpu", spool).flush()

    # The GPU rig's run is still where that rig spooled it (its own directory), not rejected.
    assert [p.relative_to(spool) for p in _files(spool)] == [Path("box-gpu") / f"{gpu_run['uuid']}.json"]
    assert cpu_flush.posted == [cpu_run["uuid"]] and cpu_flush.complete
    assert list(Run.objects.values_list("rig__name", flat=True)) == ["box-cpu"]
    gpu_flush = _client(live_server.url, gpu.raw, "box-gpu", spool).flush()
    assert gpu_flush.posted == [gpu_run["uuid"]] and _files(spool) == []
    assert sorted(Run.objects.values_list("rig__name", flat=True)) == ["box-cpu", "box-gpu"]


def test_a_run_of_another_rig_spooled_before_spools_were_per_rig_is_left_where_it_is(
    live_server: Any, make_rig_with_token: Any, tmp_path: Path
) -> None:
    gpu, cpu = make_rig_with_token("box-gpu"), make_rig_with_token("box-cpu")
    spool = tmp_path / "spool"
    gpu_run = api_run_payload(rig="box-gpu")
    # Where every rig on the host spooled before: the root itself.
    legacy = ServiceClient(f"http://127.0.0.1:{free_port('127.0.0.1')}", gpu.raw, spool_dir=spool)
    legacy.spool_dir = spool
    assert legacy.post_run(gpu_run).outcome == "spooled" and (spool / f"{gpu_run['uuid']}.json").is_file()
    config = tmp_path / "cpu.json"
    config.write_text(
        f'{{"service": {{"url": "{live_server.url}", "token": "{cpu.raw}", "rig": "box-cpu", "spool_dir": "{spool}"}}}}'
    )

    # The CPU rig's token may not post the GPU rig's run (403): not a rejection.
    code = main(["flush", "--config", str(config)])

    assert code == 1  # something is still waiting
    assert _files(spool) == [spool / f"{gpu_run['uuid']}.json"]  # not moved to any rejected/
    assert Run.objects.count() == 0
    flushed = _client(live_server.url, gpu.raw, "box-gpu", spool).flush()
    assert flushed.posted == [gpu_run["uuid"]] and _files(spool) == []
    assert Run.objects.get().rig.name == "box-gpu"

"""The rig-side task's pieces, without a broker: the spec it is sent, its
soft deadline, its reports, and that it imports nothing from Django."""

from __future__ import annotations

import ast
import signal
import socket
import time
from pathlib import Path

import pytest
from celery.exceptions import SoftTimeLimitExceeded

from runners.celery_app import RigEnv, make_app, queue_name
from runners.delivery.jobreport import JobReporter, ServiceUnreachable
from runners.tasks import TASK_NAME, SpecError, job_config, run_benchmark, soft_deadline

RIG_SIDE = ["runners/tasks.py", "runners/celery_app.py", "runners/delivery/jobreport.py"]
ROOT = Path(__file__).resolve().parents[2]


def _env(**overrides: str) -> RigEnv:
    values = {
        "broker_url": "redis://127.0.0.1:6379/13",
        "service_url": "http://rigboard.test",
        "token": "rb_rigtoken",
        "rig": "bench-a",
        "spool_dir": "/tmp/spool-a",
        "visibility_timeout_s": 60,
        "restore_interval_s": 1,
    }
    values.update(overrides)
    return RigEnv(**values)  # type: ignore[arg-type]


def _spec(**job: object) -> dict:
    return {
        "job": {"id": 7, "kind": "suite", "rig": "bench-a", "run_uuid": "3f0e", "service_url": "http://x", **job},
        "config": {"attach": {"url": "http://127.0.0.1:8080"}, "workload": {"max_tokens": 16}},
    }


@pytest.mark.parametrize("path", RIG_SIDE)
def test_the_rig_side_imports_nothing_from_django_or_the_service(path):
    tree = ast.parse((ROOT / path).read_text())
    modules = [alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names]
    modules += [node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)]
    assert not [m for m in modules if m.split(".")[0] in ("django", "rest_framework", "leaderboard")]


def test_the_task_is_registered_by_name_with_late_acks():
    assert TASK_NAME == "rigboard.run_benchmark" and run_benchmark.name == TASK_NAME
    assert run_benchmark.acks_late and run_benchmark.reject_on_worker_lost


def test_the_rig_app_is_json_only_and_acks_late():
    app = make_app(_env())
    assert app.conf.accept_content == ["json"] and app.conf.task_serializer == "json"
    assert app.conf.task_acks_late and app.conf.task_reject_on_worker_lost
    assert app.conf.worker_prefetch_multiplier == 1
    assert app.conf.task_default_queue == queue_name("bench-a") == "rig.bench-a"
    assert app.conf.broker_transport_options["visibility_timeout"] == 60


def test_the_config_gets_the_rigs_own_service_token_and_the_jobs_run_uuid():
    job, config = job_config(_spec(), _env())
    assert job["id"] == 7
    assert config["service"] == {
        "url": "http://rigboard.test",
        "token": "rb_rigtoken",
        "rig": "bench-a",
        "spool_dir": "/tmp/spool-a",
    }
    assert config["run_uuid"] == "3f0e" and config["attach"] == {"url": "http://127.0.0.1:8080"}


def test_without_RIGBOARD_URL_the_jobs_service_url_is_used():
    _, config = job_config(_spec(), _env(service_url=""))
    assert config["service"]["url"] == "http://x"


def test_it_refuses_a_job_for_another_rig_and_a_spec_without_a_job_id():
    with pytest.raises(SpecError, match="job is for rig 'bench-b', this worker is 'bench-a'"):
        job_config(_spec(rig="bench-b"), _env())
    with pytest.raises(SpecError, match="spec.job.id"):
        job_config({"config": {}}, _env())
    assert run_benchmark.apply(args=[{"config": {}}]).get()["status"] == "rejected"


def test_the_soft_deadline_interrupts_the_work_on_the_main_thread():
    started = time.monotonic()
    with pytest.raises(SoftTimeLimitExceeded, match=r"soft time limit \(0.3 s\) exceeded"), soft_deadline(0.3):
        time.sleep(120)  # interrupted, or this test takes two minutes
    elapsed = time.monotonic() - started
    assert elapsed >= 0.29 and elapsed < 60  # never early (a real-time timer); well before the work's end


def test_the_soft_deadline_is_disarmed_after_the_work():
    handler = signal.getsignal(signal.SIGALRM)
    with soft_deadline(0.2):
        assert signal.getitimer(signal.ITIMER_REAL)[0] > 0  # armed inside: the check below can fail
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    assert signal.getsignal(signal.SIGALRM) == handler


def test_a_report_to_a_service_that_is_down_gives_up_after_its_retries():
    with socket.socket() as sock:  # bind then close: a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    reporter = JobReporter(f"http://127.0.0.1:{port}", "rb_x", 7, attempt="a", retries=3, backoff_s=0.05)
    started = time.monotonic()
    with pytest.raises(ServiceUnreachable, match="ConnectionError"):
        reporter.report("running")
    assert time.monotonic() - started < 5

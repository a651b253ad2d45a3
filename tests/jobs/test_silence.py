"""Runs and jobs whose rig went silent are closed in minutes, with what they had;
a queued job whose message the broker lost is sent again (real Redis)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from leaderboard.core.errors import ApplicationError
from leaderboard.jobs.models import BenchmarkJob
from leaderboard.jobs.services import (
    job_silence_limit,
    job_status_update,
    jobs_enqueue,
    jobs_resend_lost,
    jobs_sweep_stuck,
)
from leaderboard.jobs.tasks import jobs_sweep_stuck_task
from leaderboard.results.models import Run
from leaderboard.results.services.append import run_append
from leaderboard.results.services.runs import run_create
from leaderboard.results.services.silent import runs_close_silent
from tests.fixtures.celery_worker import queued_messages
from tests.fixtures.data import run_payload
from tests.jobs.conftest import attach_spec

pytestmark = pytest.mark.django_db


def open_run(rig, **run_fields):
    payload = run_payload(run={"status": "running", **run_fields})
    payload["samples"] = payload["samples"][:2]
    return run_create(rig=rig, **payload).run


def last_heard(run: Run, ago: timedelta) -> None:
    Run.objects.filter(pk=run.pk).update(updated_at=timezone.now() - ago)


def test_an_open_run_silent_past_the_limit_is_aborted_with_its_samples(make_rig, settings):
    settings.RIGBOARD_RUN_SILENCE_S = 300
    rig = make_rig()
    silent, alive = open_run(rig), open_run(rig)
    last_heard(silent, timedelta(seconds=301))
    last_heard(alive, timedelta(seconds=200))
    (closed,) = runs_close_silent()
    assert closed.pk == silent.pk
    silent.refresh_from_db()
    assert silent.status == "aborted" and silent.finished_at is not None
    assert silent.failure_reason.startswith("no word from the runner for over 300 s (last at ")
    assert sorted(silent.samples.values_list("index", flat=True)) == [1, 2]
    assert Run.objects.get(pk=alive.pk).status == "running"


def test_an_append_or_heartbeat_keeps_a_run_open(make_rig, settings):
    settings.RIGBOARD_RUN_SILENCE_S = 300
    run = open_run(make_rig())
    last_heard(run, timedelta(seconds=400))
    run_append(run=run)  # the runner's heartbeat: an empty append
    assert runs_close_silent() == []
    assert Run.objects.get(pk=run.pk).status == "running"


def test_the_sweeper_task_closes_a_silent_job_run_and_settles_its_job(make_rig_and_token, celery_broker, settings):
    settings.RIGBOARD_RUN_SILENCE_S = 300
    rig, _ = make_rig_and_token("bench-a")
    job = jobs_enqueue(rig=rig, kind="suite", spec=attach_spec(), time_limit_s=2 * 60 * 60)
    job_status_update(job=job, status="running", attempt="a", worker="bench-a@host")
    run = open_run(rig, uuid=job.run_uuid)
    last_heard(run, timedelta(minutes=6))
    assert jobs_sweep_stuck_task.apply().get() == 2  # the run, then its job
    job.refresh_from_db()
    run.refresh_from_db()
    assert run.status == "aborted" and run.samples.count() == 2
    assert job.status == "aborted" and job.error == run.failure_reason


def test_a_running_job_with_no_run_silent_past_its_longest_step_is_aborted(make_rig_and_token, celery_broker, settings):
    settings.RIGBOARD_RUN_SILENCE_S = 300
    rig, _ = make_rig_and_token("bench-a")
    spec = {"server": {"model": "/models/m.gguf", "startup_timeout_s": 900}, "workload": {"repetitions": 1}}
    job = jobs_enqueue(rig=rig, kind="suite", spec=spec, time_limit_s=4 * 60 * 60)
    job = job_status_update(job=job, status="running", attempt="a", worker="bench-a@host", progress="server 0/1")
    assert job_silence_limit(job=job) == timedelta(seconds=900 + 300)
    assert jobs_sweep_stuck(now=job.updated_at + timedelta(seconds=1199)) == []
    (aborted,) = jobs_sweep_stuck(now=job.updated_at + timedelta(seconds=1201))
    assert aborted.status == "aborted"
    assert aborted.error.startswith("no report from worker bench-a@host for 20 min (last: server 0/1) and no run")


def test_a_queued_job_whose_message_the_broker_lost_is_sent_again(
    make_rig_and_token, celery_broker, settings, django_capture_on_commit_callbacks
):
    settings.RIGBOARD_JOB_LOST_CHECK_S = 60
    rig, _ = make_rig_and_token("bench-a")
    with django_capture_on_commit_callbacks(execute=True):
        job = jobs_enqueue(rig=rig, kind="suite", spec=attach_spec(), time_limit_s=60)
    BenchmarkJob.objects.filter(pk=job.pk).update(created_at=timezone.now() - timedelta(minutes=2))
    assert len(queued_messages(celery_broker, "rig.bench-a")) == 1
    assert jobs_resend_lost() == []  # the message is there: nothing to do

    celery_broker.delete("rig.bench-a")  # what a Redis restarted without persistence forgets
    (resent,) = jobs_resend_lost()
    assert resent.pk == job.pk and resent.status == "queued"
    assert "its message was gone from the broker" in resent.progress
    (message,) = queued_messages(celery_broker, "rig.bench-a")
    assert message["headers"]["id"] == job.celery_task_id
    assert message["args"][0]["job"]["id"] == job.pk


def test_a_young_queued_job_is_not_looked_for(make_rig_and_token, celery_broker, settings):
    settings.RIGBOARD_JOB_LOST_CHECK_S = 60
    rig, _ = make_rig_and_token("bench-a")
    jobs_enqueue(rig=rig, kind="suite", spec=attach_spec(), time_limit_s=60)  # never sent (no commit)
    assert jobs_resend_lost() == []


def test_the_sweep_command_does_what_the_task_does(make_rig, settings, capsys):
    settings.RIGBOARD_RUN_SILENCE_S = 300
    run = open_run(make_rig())
    last_heard(run, timedelta(minutes=10))
    call_command("sweep_stuck")
    assert capsys.readouterr().out.strip() == "closed 1 silent run(s), settled 0 job(s), sent 0 lost job(s) again"
    assert Run.objects.get(pk=run.pk).status == "aborted"


def test_a_runner_that_was_only_cut_off_reopens_its_run_and_loses_nothing(make_rig, settings):
    settings.RIGBOARD_RUN_SILENCE_S = 300
    rig = make_rig()
    run = open_run(rig)
    last_heard(run, timedelta(minutes=6))
    (closed,) = runs_close_silent()
    assert closed.status == "aborted" and "closed_for_silence_at" in closed.extra
    # The runner comes back (the service was out of its reach): its next append is taken.
    reopened = run_append(run=run, samples=[{"index": 3, "decode_tokens_per_s_server": 99.0, "tokens_generated": 64}])
    assert reopened.status == "running" and reopened.failure_reason == "" and reopened.finished_at is None
    assert "closed_for_silence_at" not in reopened.extra
    finished = run_append(run=run, status="finished")
    assert finished.status == "finished"
    assert sorted(finished.samples.values_list("index", flat=True)) == [1, 2, 3]


def test_a_spooled_whole_run_completes_a_run_closed_for_silence(make_rig, settings):
    settings.RIGBOARD_RUN_SILENCE_S = 300
    rig = make_rig()
    run = open_run(rig)
    last_heard(run, timedelta(minutes=6))
    runs_close_silent()
    whole = run_payload(run={"uuid": run.uuid, "status": "finished"})  # three samples
    result = run_create(rig=rig, **whole)
    assert not result.created and result.run.status == "finished"
    assert sorted(result.run.samples.values_list("index", flat=True)) == [1, 2, 3]


def test_a_run_closed_any_other_way_stays_closed(make_rig):
    run = open_run(make_rig())
    run_append(run=run, status="aborted", failure_reason="staff aborted its job")
    with pytest.raises(ApplicationError) as caught:
        run_append(run=run, samples=[{"index": 3}])
    assert caught.value.status_code == 409

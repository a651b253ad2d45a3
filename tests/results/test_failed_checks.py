"""A run's failed output checks, kept with its summary (issue 40): counted from the samples
when they are stored and when more are appended, shown in the API's summary, recounted when
staff overturn a check in the admin, and what the boards leave a broken run out by."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from django.contrib import admin
from django.test import RequestFactory

from leaderboard.results.models import Run, Sample
from tests.fixtures.api import api_run_payload, post_json
from tests.fixtures.boards import run_ids_in, samples_from

pytestmark = pytest.mark.django_db


def test_stored_and_appended_samples_keep_the_count(rig_with_token) -> None:
    body = api_run_payload(status="running", samples=[], sweep_points=[], finished_at=None)
    assert post_json(rig_with_token.client, "/api/runs/", body).status_code == 201
    url = f"/api/runs/{body['uuid']}/samples/"
    checked = [
        {"index": 1, "decode_tokens_per_s_server": 100.0, "output_ok": False},
        {"index": 2, "decode_tokens_per_s_server": 101.0, "output_ok": None},  # not checked: not a failure
    ]
    first = post_json(rig_with_token.client, url, {"samples": checked})
    assert first.status_code == 200, first.json()
    assert first.json()["summary"]["failed_checks"] == 1
    more = [{"index": 3, "decode_tokens_per_s_server": 99.0, "output_ok": False}]
    assert post_json(rig_with_token.client, url, {"samples": more}).json()["summary"]["failed_checks"] == 2
    assert Run.objects.get(uuid=body["uuid"]).failed_checks == 2


def test_a_check_overturned_in_the_admin_puts_the_run_back_on_the_board(client, board_run) -> None:
    failing = samples_from([300.0, 301.0])
    failing[1]["output_ok"] = False
    broken = board_run(samples=failing)
    good = board_run(tps=[100.0, 101.0])
    assert broken.failed_checks == 1
    assert run_ids_in(client.get("/").text) == [good.pk]

    # What the run's change form does on save: the sample inline saved, then the related hook.
    Sample.objects.filter(run=broken, index=2).update(output_ok=True)
    run_admin = admin.site._registry[Run]
    request = RequestFactory().post(f"/admin/results/run/{broken.pk}/change/")
    run_admin.save_related(request, SimpleNamespace(instance=broken, save_m2m=lambda: None), [], True)

    broken.refresh_from_db()
    assert broken.failed_checks == 0
    assert run_ids_in(client.get("/").text) == [broken.pk, good.pk]

"""``manage.py import_runs``: run files stored as measured runs of a rig, in batches
(the bulk intake), each file stored whole or refused by name."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from leaderboard.results.models import Run, Sample
from tests.fixtures.api import api_run_payload

pytestmark = pytest.mark.django_db


def _write(tmp_path, name, body):
    path = tmp_path / name
    path.write_text(json.dumps(body), encoding="utf-8")
    return path


def test_it_stores_every_file_in_batches_and_nothing_twice(tmp_path, rig_with_token, settings):
    settings.RIGBOARD_MAX_BULK_RUNS = 2  # three files: two batches
    bodies = [api_run_payload(rig="") for _ in range(3)]  # written with --no-post: no rig named
    paths = [_write(tmp_path, f"run{i}.json", body) for i, body in enumerate(bodies)]
    out = StringIO()
    call_command("import_runs", "--rig", "api-rig", *map(str, paths), stdout=out)
    assert out.getvalue().count(": stored as run") == 3
    assert set(Run.objects.values_list("rig__name", flat=True)) == {"api-rig"}
    assert Sample.objects.count() == 9
    again = StringIO()
    call_command("import_runs", "--rig", "api-rig", *map(str, paths), stdout=again)
    assert again.getvalue().count(": already stored as run") == 3
    assert Run.objects.count() == 3


def test_a_refused_file_is_named_with_its_field_and_the_others_are_stored(tmp_path, rig_with_token):
    good, bad = api_run_payload(), api_run_payload()
    bad["samples"][0]["ttft_ms"] = -1
    paths = [_write(tmp_path, "bad.json", bad), _write(tmp_path, "good.json", good)]
    with pytest.raises(CommandError) as refused:
        call_command("import_runs", "--rig", "api-rig", *map(str, paths), stdout=StringIO())
    assert "1 of 2 files refused" in str(refused.value)
    assert "bad.json: samples.0.ttft_ms:" in str(refused.value)
    assert list(Run.objects.values_list("uuid", flat=True).order_by()) == [Run.objects.get(uuid=good["uuid"]).uuid]


def test_a_rig_created_here_has_the_gpus_its_run_detected(tmp_path, db):
    """The lent H200's run: its fingerprint lists one NVIDIA H200 (143771 MiB, 700 W);
    the rig is registered with it, named as the site names GPUs, so it has a GPU page."""
    from leaderboard.results.models import Rig
    from leaderboard.results.services.rigs import gpu_specs_from_fingerprint

    body = api_run_payload(rig="")
    gpu = {"index": 0, "name": "NVIDIA H200", "vram_mib": 143771, "power_limit_w": 700.0}
    body["fingerprint"] = {"gpus": [gpu, {**gpu, "index": 1}], "cpu": "Xeon"}
    path = _write(tmp_path, "h200.json", body)
    call_command("import_runs", "--rig", "lent", "--create-rig", str(path), stdout=StringIO())
    rig = Rig.objects.get(name="lent")
    assert [(g.model, g.vram_gb, g.count, g.power_limit_w) for g in rig.gpus.all()] == [("H200", 140, 2, 700.0)]
    assert round(143771 / 1024) == 140  # the oracle: MiB to GiB, as nvidia-smi shows it
    assert gpu_specs_from_fingerprint({"gpus": []}) == [] and gpu_specs_from_fingerprint(None) == []

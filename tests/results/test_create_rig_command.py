"""manage.py create_rig: registers a rig with its GPUs and prints a token once."""

from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command

from leaderboard.results.models import Rig, RigToken
from leaderboard.results.models.rigs import hash_token
from leaderboard.results.services.rigs import GpuSpec, gpu_spec_parse
from tests.fixtures.api import api_run_payload, post_json

pytestmark = pytest.mark.django_db


def create_rig(*args):
    out, err = io.StringIO(), io.StringIO()
    call_command("create_rig", *args, stdout=out, stderr=err)
    return out.getvalue().strip(), err.getvalue()


def test_it_creates_a_rig_and_prints_a_working_token(api_client):
    raw, log = create_rig("six-3090", "--gpu", "RTX 3090:24:6:280", "--os", "Ubuntu 24.04", "--cpu", "EPYC 7302")
    rig = Rig.objects.get(name="six-3090")
    assert rig.os == "Ubuntu 24.04" and rig.cpu == "EPYC 7302"
    gpu = rig.gpus.get()
    assert (gpu.model, gpu.vram_gb, gpu.count, gpu.power_limit_w) == ("RTX 3090", 24.0, 6, 280.0)
    assert "6× RTX 3090" in log
    assert RigToken.objects.get(rig=rig).key_hash == hash_token(raw)
    api_client.credentials(HTTP_AUTHORIZATION=f"Token {raw}")
    assert post_json(api_client, "/api/runs/", api_run_payload(rig="six-3090")).status_code == 201


def test_it_refuses_an_existing_name_unless_told_to_issue_another_token():
    first, _ = create_rig("mixed", "--gpu", "RTX 3090 Ti:24", "--gpu", "RTX 3090:24")
    with pytest.raises(CommandError, match="already exists"):
        create_rig("mixed")
    second, _ = create_rig("mixed", "--exists-ok", "--gpu", "ignored:1")
    assert first != second
    assert RigToken.objects.filter(rig__name="mixed").count() == 2
    assert Rig.objects.get(name="mixed").gpu_summary() == "RTX 3090 Ti + RTX 3090"


@pytest.mark.parametrize("spec", ["", ":24", "RTX 3090:big", "RTX 3090:24:0", "a:1:2:3:4"])
def test_it_rejects_a_bad_gpu_spec(spec):
    with pytest.raises(CommandError):
        create_rig("bad", "--gpu", spec)
    assert not Rig.objects.exists()


def test_a_gpu_spec_needs_only_the_model():
    assert gpu_spec_parse("RTX 5090") == GpuSpec(model="RTX 5090")
    assert gpu_spec_parse("H100 SXM:80::700") == GpuSpec(model="H100 SXM", vram_gb=80, count=1, power_limit_w=700)

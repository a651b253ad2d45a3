"""A parameter the rig's llama-server does not accept is refused when the campaign
is defined, naming ``space.<parameter>``: by the CLI before the first trial (exit 2),
from the binary's own ``--help``; by the service at POST, from the flags the rig's
latest run reported in its fingerprint."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from leaderboard.campaigns.models import Campaign
from leaderboard.jobs.models import BenchmarkJob
from runners import cli
from runners.config import SERVER_FLAGS
from runners.harness.fingerprint import server_flags

# The help text of a llama-server build that predates --spec-type, as such a build prints it.
# No older build can be had on this machine: the binary is a script that prints it (a fake at
# the boundary: the check reads nothing else of the binary).
OLD_HELP = """----- common params -----

-h,    --help, --usage                  print usage and exit
-t,    --threads N                      number of CPU threads to use during generation
-c,    --ctx-size N                     size of the prompt context (default: 4096)
-fa,   --flash-attn [on|off|auto]       set Flash Attention use ('on', 'off', or 'auto')
-m,    --model FNAME                    model path
"""


def old_server(tmp_path: Path) -> Path:
    script = tmp_path / "llama-server-old"
    script.write_text("#!/bin/sh\ncat <<'EOF'\n" + OLD_HELP + "EOF\n")
    script.chmod(0o755)
    return script


def test_the_packaged_llama_server_lists_every_flag_the_runner_passes(llama_server_bin, tmp_path):
    flags = server_flags(llama_server_bin, cache_dir=tmp_path)
    assert set(SERVER_FLAGS.values()) <= set(flags), sorted(set(SERVER_FLAGS.values()) - set(flags))
    assert "--warp-drive" not in flags and "-t" in flags
    assert (tmp_path / "server-flags-cache.json").is_file()


def test_the_cli_refuses_a_parameter_its_llama_server_does_not_accept_before_any_trial(tmp_path, capsys):
    rig = {
        "server": {"model": str(tmp_path / "m.gguf"), "binary": str(old_server(tmp_path))},
        "cache_dir": str(tmp_path / "cache"),
    }
    campaign = {"name": "old build", "space": {"threads": [1, 2], "spec_type": ["none", "ngram-simple"]}}
    (tmp_path / "rig.json").write_text(json.dumps(rig))
    (tmp_path / "campaign.json").write_text(json.dumps(campaign))
    argv = [
        "campaign",
        "--no-post",
        "--config",
        str(tmp_path / "rig.json"),
        "--campaign",
        str(tmp_path / "campaign.json"),
    ]

    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert "space.spec_type" in err and "does not accept --spec-type" in err
    assert not (tmp_path / "cache" / "logs").exists()  # no trial started


@pytest.mark.django_db
def test_the_service_refuses_at_post_what_the_rig_last_reported_it_does_not_accept(
    staff_client, make_rig_with_token, make_run, tmp_path
):
    rig = make_rig_with_token("old-rig")
    body = {
        "rig": "old-rig",
        "name": "old build",
        "space": {"threads": [1, 2], "spec_type": ["none", "ngram-simple"]},
        "base_config": {"server": {"model": "/m.gguf"}},
    }
    flags = server_flags(old_server(tmp_path), cache_dir=tmp_path)
    assert "--threads" in flags and "-fa" in flags and "--spec-type" not in flags
    make_run(
        rig=rig.rig, run={"uuid": uuid.uuid4(), "status": "finished", "fingerprint": {"server_flags": " ".join(flags)}}
    )

    response = staff_client.post("/api/campaigns/", body, format="json")

    assert response.status_code == 400, response.json()
    assert "does not accept --spec-type" in response.json()["errors"]["space.spec_type"][0]
    assert Campaign.objects.count() == 0 and BenchmarkJob.objects.count() == 0

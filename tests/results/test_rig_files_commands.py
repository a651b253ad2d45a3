"""The commands that store files for a rig (import_llama_bench, import_campaign,
import_nightly): a rig that does not exist, or a file that cannot be read, is a
CommandError that says which, and nothing is stored."""

from __future__ import annotations

import io
import re

import pytest
from django.core.management import CommandError, call_command

from leaderboard.results.models import Run

pytestmark = pytest.mark.django_db

COMMANDS = ["import_llama_bench", "import_campaign", "import_nightly"]


@pytest.mark.parametrize("command", COMMANDS)
def test_it_names_a_rig_that_does_not_exist(command, tmp_path):
    path = tmp_path / "file.json"
    path.write_text("{}", encoding="utf-8")
    with pytest.raises(CommandError, match=r"^no rig named 'nowhere' \(create_rig first\)$"):
        call_command(command, str(path), "--rig", "nowhere", stdout=io.StringIO())
    assert not Run.objects.exists()


@pytest.mark.parametrize("command", COMMANDS)
def test_it_names_a_file_it_cannot_read(command, make_rig, tmp_path):
    make_rig(name="bench-a")
    missing = tmp_path / "missing.json"
    with pytest.raises(CommandError, match=f"^{re.escape(str(missing))}: "):
        call_command(command, str(missing), "--rig", "bench-a", stdout=io.StringIO())
    assert not Run.objects.exists()

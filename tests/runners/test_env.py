"""runners/env.py: the rig side's one reader of its environment (as settings.py is
the service's): typed, failing loudly with the variable's name, and the only
module of runners/ that reads a variable."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from runners import env
from runners.builds import nightly
from runners.delivery import client
from runners.env import RigEnv, RigEnvError

RUNNERS = Path(env.__file__).parent


def test_the_worker_settings_are_read_typed_with_their_defaults():
    read = RigEnv.read({"RIGBOARD_BROKER_URL": "redis://b/1", "RIGBOARD_RIG": "r1", "RIGBOARD_RESTORE_INTERVAL_S": "3"})
    assert (read.broker_url, read.rig, read.token, read.spool_dir) == ("redis://b/1", "r1", "", "")
    assert (read.visibility_timeout_s, read.restore_interval_s) == (24 * 60 * 60, 3)
    with pytest.raises(RigEnvError, match="RIGBOARD_VISIBILITY_TIMEOUT_S must be an integer, got 'soon'"):
        RigEnv.read({"RIGBOARD_VISIBILITY_TIMEOUT_S": "soon"})


def test_the_spool_and_the_nightly_take_their_places_from_it(monkeypatch, tmp_path):
    monkeypatch.setenv("RIGBOARD_SPOOL_FALLBACK_DIRS", os.pathsep.join([str(tmp_path / "a"), "", "~/b"]))
    monkeypatch.setenv("RIGBOARD_BUILD_CACHE_DIR", "~/builds-here")
    assert client.fallback_dirs() == [tmp_path / "a", Path("~/b").expanduser()]
    assert nightly.build_cache_dir() == Path("~/builds-here").expanduser()
    monkeypatch.delenv("RIGBOARD_SPOOL_FALLBACK_DIRS")
    monkeypatch.delenv("RIGBOARD_BUILD_CACHE_DIR")
    assert client.fallback_dirs()[-1] == Path.home() / "rigboard-spool"
    assert nightly.build_cache_dir() == Path("~/.cache/rigboard/builds").expanduser()


def test_no_other_module_of_the_rig_side_reads_a_variable():
    # Handing the whole environment to a child process (git, the compiler) reads no setting.
    reads = re.compile(r"os\.environ(\.get)?\s*[\[(]|os\.getenv\(")
    found = [
        f"{path.relative_to(RUNNERS)}:{number}"
        for path in RUNNERS.rglob("*.py")
        if path.name != "env.py"
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if reads.search(line)
    ]
    assert found == []
    assert reads.search('raw = os.environ.get("X", "")')  # the check sees a read

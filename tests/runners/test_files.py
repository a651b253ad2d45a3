"""write_atomically: the whole new file or the old one, never part of it, and no
temporary file left behind, against a real full filesystem (tests/runners/unwritable.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from runners.files import write_atomically
from tests.runners.unwritable import full_dir


def test_it_replaces_the_file_and_leaves_nothing_else(tmp_path: Path) -> None:
    target = tmp_path / "run.json"
    target.write_text("old")
    write_atomically(target, '{"new": true}')
    assert target.read_text() == '{"new": true}'
    assert [p.name for p in tmp_path.iterdir()] == ["run.json"]


def test_a_write_the_disk_cannot_take_keeps_the_old_file_and_no_temporary_one(tmp_path: Path) -> None:
    with full_dir(tmp_path / "full") as full:
        target = full / "run.json"
        with pytest.raises(OSError, match="No space left on device"):
            write_atomically(target, "x" * 64 * 1024)
        assert not target.exists()
        assert sorted(p.name for p in full.iterdir()) == ["filler"]


def test_a_failed_write_keeps_the_file_it_would_have_replaced(tmp_path: Path) -> None:
    target = tmp_path / "run.json"
    target.write_text("old")
    (tmp_path / f".run.json.{os.getpid()}.tmp").mkdir()  # the temporary name is taken
    with pytest.raises(OSError):
        write_atomically(target, "new")
    assert target.read_text() == "old"

"""Reads of the dumps on disk for the /data/ page and its downloads."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.conf import settings

from leaderboard.opendata.writer import DUMP_PREFIX, LATEST, MANIFEST, dump_names


def _root() -> Path:
    return Path(settings.RIGBOARD_DUMP_DIR)


def latest_dump_name(root: Path | None = None) -> str | None:
    """Return the name ``LATEST`` gives, when that dump is there; None before the first dump."""
    root = root or _root()
    try:
        name = (root / LATEST).read_text(encoding="utf-8").strip()
    except OSError:
        return None
    return name if name in dump_names(root) else None


def dump_manifest(name: str, root: Path | None = None) -> dict[str, Any] | None:
    """Return the manifest of dump ``name``; None for a name that is not a finished dump."""
    root = root or _root()
    if not name.startswith(DUMP_PREFIX) or name not in dump_names(root):
        return None
    try:
        document: dict[str, Any] = json.loads((root / name / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return document


def dump_file(name: str, filename: str, root: Path | None = None) -> Path | None:
    """Return the path of ``filename`` in dump ``name`` (``latest``: the newest) when its manifest
    lists it (or it is the manifest); None otherwise, so no other path can be asked for."""
    root = root or _root()
    if name == "latest":
        name = latest_dump_name(root) or ""
    manifest = dump_manifest(name, root)
    if manifest is None:
        return None
    listed = {f["name"] for f in manifest.get("files", [])} | {MANIFEST}
    return root / name / filename if filename in listed else None

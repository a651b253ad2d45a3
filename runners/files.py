"""Files the runner writes that another process may read at any moment: the
spool, the server records, the caches, the run's extra copy."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


def write_atomically(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` so that a reader finds the old file or the whole
    new one, never part of it: into a temporary file beside it (a dot name that
    no ``*.json`` glob picks up), flushed to disk, then renamed over ``path``.
    Raise OSError when it cannot be written (a full disk, a read-only directory);
    the temporary file is removed then, and ``path`` is left as it was."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with tmp.open("w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        tmp.replace(path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise

"""A small progress bar for the terminal (no tqdm on rigs): one line on stderr, redrawn in place."""

from __future__ import annotations

import sys
import time
from typing import TextIO


class ProgressBar:
    """Callable as ``progress(stage, done, total)``; draws ``stage [####----] done/total elapsed``."""

    def __init__(self, *, stream: TextIO | None = None, width: int = 30) -> None:
        self.stream = stream or sys.stderr
        self.width = width
        self.started = time.monotonic()
        self._stage = ""
        self._tty = getattr(self.stream, "isatty", lambda: False)()

    def __call__(self, stage: str, done: int, total: int) -> None:
        filled = int(self.width * done / total) if total else self.width
        bar = "#" * filled + "-" * (self.width - filled)
        line = f"{stage:<12} [{bar}] {done}/{total} {time.monotonic() - self.started:6.1f}s"
        if self._tty:
            end = "\n" if done >= total else ""
            self.stream.write(f"\r{line}{end}")
        elif done >= total or stage != self._stage:
            self.stream.write(line + "\n")
        self.stream.flush()
        self._stage = stage

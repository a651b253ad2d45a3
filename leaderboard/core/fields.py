"""A stored JSON document read whatever the caller's stack depth.

Ingest bounds a run's documents (``fingerprint``, ``extra``: depth 16, 256 KiB), but one stored
before the bounds may nest hundreds deep (the report's case: 900 nested lists). Python's decoder
recurses once a level, against the interpreter's recursion limit, so whether such a document
decodes depended on how deep the caller already was: the run page answered 500 under a test
runner with a few more frames. A document that meets the limit is decoded again with
``EXTRA_DEPTH`` more levels of room (bounded, so the C stack stays safe); one deeper still reads as a
short document saying so, and the stored text is kept as it is."""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Sequence
from typing import Any

from django.db import models

EXTRA_DEPTH = 2_000
_deep_reads = threading.Lock()


class DocumentField(models.JSONField):
    """A JSONField whose reads never fail on a document's depth (module doc). Stored as a
    JSONField is, and described to migrations as one: the column never changes, and no
    migration rebuilds the runs table for it (SQLite, the embedded default, rebuilds a table
    to alter a field, and cannot re-create its NULLS LAST indexes)."""

    def deconstruct(self) -> tuple[str, str, Sequence[Any], dict[str, Any]]:
        name, _, args, kwargs = super().deconstruct()
        return name, "django.db.models.JSONField", args, kwargs

    def from_db_value(self, value: Any, expression: Any, connection: Any) -> Any:
        try:
            return super().from_db_value(value, expression, connection)
        except RecursionError:
            return _decode_with_room(value, self.decoder)


def _decode_with_room(text: str, decoder: type[json.JSONDecoder] | None) -> Any:
    with _deep_reads:  # the limit is the interpreter's: one deep read at a time raises it
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(limit + EXTRA_DEPTH)
        try:
            return json.loads(text, cls=decoder)
        except RecursionError:
            return {"not_read": f"nested deeper than {EXTRA_DEPTH:,} levels ({len(text):,} characters stored)"}
        finally:
            sys.setrecursionlimit(limit)

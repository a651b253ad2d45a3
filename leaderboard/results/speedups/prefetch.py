"""Related objects already in hand attached to an instance as if prefetched.

Ingest builds a run's samples, sweep points and levels itself; attached here,
the 201 body is represented from them instead of 5 queries reading them back.
Django has no public API for this: it sets what prefetch_related sets
(``_result_cache``, ``_prefetch_done``, ``_prefetched_objects_cache``). The
plain path is reading the run back (``selectors.run_get``), which GET
/api/runs/{uuid}/ does; tests/results/test_compiled_outputs.py checks that
the 201 body and that GET give the same document."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db import models


def attach_prefetched(instance: models.Model, name: str, objects: Sequence[Any]) -> None:
    """Make ``instance.<name>.all()`` return ``objects`` without a query, as prefetch_related would."""
    queryset = getattr(instance, name).all()
    queryset._result_cache = list(objects)
    queryset._prefetch_done = True
    instance._prefetched_objects_cache = {  # type: ignore[attr-defined]
        **getattr(instance, "_prefetched_objects_cache", {}),
        name: queryset,
    }

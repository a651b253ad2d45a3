"""The process's start-up heap, frozen out of the garbage collector (issue 40).

Python's full (generation-2) collection walks every tracked object: in a Rigboard
process, Django's and the app's modules, the URLconf and the kept values, several
hundred thousand objects. On a GPU page at 1M runs one request in three paid a full
collection of ~100 ms (p50 67 ms, p95 175 ms: benchmarks/README.md, fifteenth session).
``gc.freeze()`` moves what exists at start-up to a permanent generation that no
collection walks: collections still run, over what requests made since. The
serving process (wsgi.py) freezes once loaded; site_latency.py measures the same way."""

from __future__ import annotations

import gc


def freeze_startup_heap() -> int:
    """Load what Django loads lazily on the first request (the URLconf and the views it
    imports), collect what start-up left as garbage, then freeze the rest; return how
    many objects were frozen."""
    from django.urls import get_resolver

    get_resolver().url_patterns  # noqa: B018 - imports every view module
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()

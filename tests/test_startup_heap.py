"""The serving process freezes its start-up heap (leaderboard/core/heap.py, issue 40):
a full garbage collection inside a request then walks what requests made, not the
whole of Django. Checked in a fresh interpreter, as gunicorn imports wsgi.py."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.embedded import ROOT, embedded_env

PROBE = r"""
import gc, json
before = gc.get_freeze_count()
import leaderboard.wsgi
from django.urls import get_resolver
frozen = gc.get_freeze_count()
walked = len(gc.get_objects())  # what a full collection walks: the permanent generation is not listed
print(json.dumps({"before": before, "frozen": frozen, "urlconf": len(get_resolver().url_patterns),
                  "walked": walked}))
"""


def test_importing_the_wsgi_application_freezes_the_startup_heap(tmp_path) -> None:
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=embedded_env(tmp_path), capture_output=True,
                          text=True, timeout=120, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["before"] == 0 and found["frozen"] > 50_000  # Django, the app and the URLconf
    assert found["urlconf"] > 5  # loaded before the freeze, not on the first request
    # What a full collection walks is a small part of the heap: what was made after the freeze.
    assert found["walked"] < found["frozen"] / 10, found

"""Shared fixtures live in tests/fixtures/, one module per area, so each area
owns its own; they are registered here."""

import os
import tempfile

# A run the spool cannot take goes to a fallback directory that every flush
# empties: the tests' own, never the machine's shared /tmp/rigboard-spool
# (subprocesses — the CLI, rig workers — inherit it).
os.environ["RIGBOARD_SPOOL_FALLBACK_DIRS"] = tempfile.mkdtemp(prefix="rigboard-test-fallback-")

pytest_plugins = [
    "tests.fixtures.data",
    "tests.fixtures.boards",
    "tests.fixtures.browser",
    "tests.fixtures.api",
    "tests.fixtures.celery_worker",
    "tests.fixtures.delivery",
    "tests.fixtures.gunicorn",
    "tests.fixtures.llama",
    "tests.fixtures.llama_jobs",
    "tests.fixtures.regressions",
]

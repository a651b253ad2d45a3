"""Shared fixtures live in tests/fixtures/, one module per area, so each area
owns its own; they are registered here."""

import os
import tempfile

import pytest

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


def _weight(item: pytest.Item) -> int:
    # Real workers and a real llama-server: minutes (the chain tests); a real llama-server, or
    # marked slow: a minute or so.
    marks = ("celery_worker", "celery_worker", "llama", "slow")
    return sum(item.get_closest_marker(mark) is not None for mark in marks)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Longest first: pytest-xdist hands tests out in this order, so the chain tests start
    early and the short ones fill both processes' ends (they were last, one process running
    them while the other had nothing left). pytest-django's own ordering (database tests,
    then transactional ones, then the rest) runs after this one (its hook is tryfirst too,
    registered before this conftest) and sorts stably: longest first within each group."""
    items.sort(key=lambda item: -_weight(item))

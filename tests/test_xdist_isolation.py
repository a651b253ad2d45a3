"""Under pytest-xdist (`make test`: one test process per core) each process has its own
Redis database, as pytest-django gives each its own test database: a rig worker started by
one process must never take the messages of the other's."""

from __future__ import annotations

import pytest

from tests.fixtures.celery_worker import redis_url_for_tests


def test_each_test_process_has_its_own_redis_database(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RIGBOARD_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    assert redis_url_for_tests() == "redis://127.0.0.1:6379/15"
    seen = set()
    for worker in ("gw0", "gw1", "gw2"):
        monkeypatch.setenv("PYTEST_XDIST_WORKER", worker)
        seen.add(redis_url_for_tests())
    assert seen == {"redis://127.0.0.1:6379/15", "redis://127.0.0.1:6379/14", "redis://127.0.0.1:6379/13"}


def test_more_processes_than_databases_below_the_url_is_a_usage_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RIGBOARD_TEST_REDIS_URL", "redis://127.0.0.1:6379/1")
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw2")
    with pytest.raises(pytest.UsageError, match="must end in a database number >= 2"):
        redis_url_for_tests()

"""Fixtures of the intake tests."""

from __future__ import annotations

import uuid

import pytest
import redis

from tests.fixtures.celery_worker import redis_url_for_tests


@pytest.fixture
def redis_cache(settings):
    """The cache on the test Redis, under a prefix of this test's own; yield a client on it."""
    url = redis_url_for_tests()
    client = redis.Redis.from_url(url)
    try:
        client.ping()
    except redis.ConnectionError as exc:
        pytest.fail(f"Redis is not answering at {url}: {exc}")
    prefix = f"throttle-test-{uuid.uuid4().hex}"
    settings.CACHES = {
        "default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": url, "KEY_PREFIX": prefix}
    }
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"rig_token": "3/min", "account": "2/min"},
    }
    yield client, prefix
    keys = list(client.scan_iter(f"{prefix}*"))
    if keys:
        client.delete(*keys)

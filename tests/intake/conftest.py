"""Fixtures of the intake tests."""

from __future__ import annotations

import uuid

import pytest

from tests.fixtures.celery_worker import redis_client_for_tests, redis_url_for_tests


@pytest.fixture
def redis_cache(settings):
    """The cache on the test Redis, under a prefix of this test's own; yield a client on it."""
    client = redis_client_for_tests()
    prefix = f"throttle-test-{uuid.uuid4().hex}"
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": redis_url_for_tests(),
            "KEY_PREFIX": prefix,
        }
    }
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"rig_token": "3/min", "account": "2/min"},
    }
    yield client, prefix
    keys = list(client.scan_iter(f"{prefix}*"))
    if keys:
        client.delete(*keys)

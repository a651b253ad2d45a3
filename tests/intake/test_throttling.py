"""Write limits per rig token and per account, counted in the real Redis (429 + Retry-After)."""

from __future__ import annotations

import uuid

import pytest
import redis
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from tests.fixtures.celery_worker import redis_url_for_tests

pytestmark = pytest.mark.django_db


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


def test_a_token_past_its_write_limit_gets_429_with_retry_after(redis_cache, make_rig_with_token):
    client, prefix = redis_cache
    first = make_rig_with_token("busy-rig")
    for _ in range(3):
        assert first.client.post("/api/llama-bench/", data=b"", content_type="text/plain").status_code == 400
    refused = first.client.post("/api/llama-bench/", data=b"", content_type="text/plain")
    assert refused.status_code == 429
    assert int(refused["Retry-After"]) > 0
    assert "throttled" in refused.json()["errors"]["detail"][0].lower()
    assert list(client.scan_iter(f"{prefix}*throttle_rig_token_{first.token.pk}"))  # counted in Redis
    # Reads are not limited, and another token of the same rig has its own count.
    assert first.client.get("/api/runs/").status_code == 200
    second = make_rig_with_token("busy-rig")
    assert second.client.post("/api/llama-bench/", data=b"", content_type="text/plain").status_code == 400


def test_an_account_past_its_write_limit_gets_429(redis_cache):
    user = User.objects.create_user("writer", password="pw-writer-123", is_staff=True)
    client = APIClient()
    client.force_login(user)
    for _ in range(2):
        assert client.post("/api/jobs/", {"rig": "nope"}, format="json").status_code == 400
    refused = client.post("/api/jobs/", {"rig": "nope"}, format="json")
    assert refused.status_code == 429
    assert int(refused["Retry-After"]) > 0

"""Write limits per rig token and per account, counted in the real Redis (429 + Retry-After);
log-in brute force stopped by allauth's rate limit, counted there too."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

pytestmark = pytest.mark.django_db


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


def test_failed_log_ins_are_rate_limited(redis_cache):
    User.objects.create_user("victim@example.org", "victim@example.org", "the-right-pass-phrase-1")
    client = APIClient()
    pages = [
        client.post("/accounts/login/", {"login": "victim@example.org", "password": f"wrong-{i}"}).content.decode()
        for i in range(6)
    ]
    limited = "Too many failed login attempts"
    assert not any(limited in page for page in pages[:5])
    assert limited in pages[5]  # allauth's login_failed limit: 5 per 5 minutes per account
    # Even the right password is refused while the limit holds.
    right = client.post("/accounts/login/", {"login": "victim@example.org", "password": "the-right-pass-phrase-1"})
    assert limited in right.content.decode()

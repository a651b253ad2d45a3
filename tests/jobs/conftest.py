"""Helpers for the jobs tests: staff and plain users, rigs with tokens, specs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from leaderboard.results.models import Rig, RigToken


def attach_spec(url: str = "http://127.0.0.1:8080", **workload: Any) -> dict[str, Any]:
    """Return a job spec that attaches to ``url`` and runs a small workload."""
    return {
        "attach": {"url": url},
        "workload": {"max_tokens": 16, "repetitions": 1, "warmup": 0, **workload},
    }


@pytest.fixture
def user_client(db: None) -> APIClient:
    user = User.objects.create_user("visitor", password="pw-visitor-123")
    client = APIClient()
    client.force_login(user)
    return client


@pytest.fixture
def make_rig_and_token(make_rig: Callable[..., Rig]) -> Callable[..., tuple[Rig, str]]:
    """Return a function making a rig and the raw token it authenticates with."""

    def _make(name: str) -> tuple[Rig, str]:
        rig = make_rig(name=name)
        _, raw = RigToken.issue(rig=rig, label="tests")
        return rig, raw

    return _make


def token_client(raw: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {raw}")
    return client

"""Write limits: per rig token and per signed-in account, counted in the cache
(Redis when CACHE_URL / REDIS_URL is set, so every gunicorn worker shares the
counts). Reads are not limited here. Over the limit: 429 with Retry-After."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from django.http import HttpRequest, HttpResponse
from rest_framework.request import Request
from rest_framework.settings import api_settings
from rest_framework.throttling import SimpleRateThrottle

from leaderboard.results.models import RigToken

_SAFE = ("GET", "HEAD", "OPTIONS")


class _SettingsRate(SimpleRateThrottle):
    """Reads its rate when a request comes, not when the class is imported
    (SimpleRateThrottle's class attribute), so a changed setting applies."""

    def get_rate(self) -> str | None:
        rate = api_settings.DEFAULT_THROTTLE_RATES.get(self.scope or "")
        return str(rate) if rate is not None else None


class RigTokenRateThrottle(_SettingsRate):
    """``RIGBOARD_THROTTLE_RIG_WRITES`` writes per token (e.g. 120/min)."""

    scope = "rig_token"

    def get_cache_key(self, request: Request, view: Any) -> str | None:
        if request.method in _SAFE or not isinstance(request.auth, RigToken):
            return None
        return self.cache_format % {"scope": self.scope, "ident": request.auth.pk}


class AccountRateThrottle(_SettingsRate):
    """``RIGBOARD_THROTTLE_ACCOUNT_WRITES`` writes per signed-in user (e.g. 60/min)."""

    scope = "account"

    def get_cache_key(self, request: Request, view: Any) -> str | None:
        user = getattr(request, "user", None)
        if request.method in _SAFE or user is None or not user.is_authenticated:
            return None
        return self.cache_format % {"scope": self.scope, "ident": user.pk}


def account_write_limited(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Count a web form's POST against the account's write limit, as the API's writes
    are (one counter): past it, 429 with Retry-After and nothing done."""

    @functools.wraps(view)
    def limited(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        throttle = AccountRateThrottle()
        if request.method not in _SAFE and not throttle.allow_request(request, None):  # type: ignore[arg-type]
            wait_s = int(throttle.wait() or 1)
            response = HttpResponse(
                f"Too many writes from this account: try again in {wait_s} s.",
                status=429,
                content_type="text/plain; charset=utf-8",
            )
            response["Retry-After"] = str(wait_s)
            return response
        return view(request, *args, **kwargs)

    return limited

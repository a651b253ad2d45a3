"""Write limits: per rig token and per signed-in account, counted in the cache
(Redis when CACHE_URL / REDIS_URL is set, so every gunicorn worker shares the
counts). Reads are not limited here. Over the limit: 429 with Retry-After."""

from __future__ import annotations

from typing import Any

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

"""API authentication for rigs: ``Authorization: Token <raw token>``.

A rig is not a Django user, so ``request.user`` stays AnonymousUser and
``request.auth`` is the RigToken; permissions (api/permissions.py) look at
``request.auth``, not at ``request.user.is_authenticated``."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.contrib.auth.models import AnonymousUser
from django.utils import timezone
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions
from rest_framework.request import Request

from leaderboard.results.models import RigToken
from leaderboard.results.models.rigs import hash_token

# Writing last_used_at on every request would turn each read-heavy retry loop
# into a write; a minute is precise enough to spot a dead or leaked token.
LAST_USED_RESOLUTION = timedelta(minutes=1)
KEYWORD = "Token"


class RigTokenAuthentication(authentication.BaseAuthentication):
    """Authenticate a rig by its raw API token (looked up by sha256)."""

    def authenticate(self, request: Request) -> tuple[AnonymousUser, RigToken] | None:
        """Return (AnonymousUser, token) for a valid, unrevoked token; None when
        the request carries no ``Token`` header (other authenticators may try).
        Raise AuthenticationFailed for a malformed, unknown or revoked token."""
        header = authentication.get_authorization_header(request).split()
        if not header or header[0].lower() != KEYWORD.lower().encode():
            return None
        if len(header) != 2:
            raise exceptions.AuthenticationFailed("Invalid token header: expected 'Token <token>' with no spaces.")
        try:
            raw = header[1].decode()
        except UnicodeDecodeError as exc:
            raise exceptions.AuthenticationFailed("Invalid token header: the token is not valid text.") from exc
        return AnonymousUser(), self.token_for(raw)

    def token_for(self, raw: str) -> RigToken:
        """Return the active RigToken whose hash matches ``raw``; raise AuthenticationFailed otherwise."""
        try:
            # .get(), not .first(): no ORDER BY for a lookup by a unique key.
            token = RigToken.objects.select_related("rig").get(key_hash=hash_token(raw))
        except RigToken.DoesNotExist:
            raise exceptions.AuthenticationFailed("Invalid token.") from None
        if token.revoked_at is not None:
            raise exceptions.AuthenticationFailed("This token has been revoked.")
        now = timezone.now()
        if token.last_used_at is None or now - token.last_used_at >= LAST_USED_RESOLUTION:
            RigToken.objects.filter(pk=token.pk).update(last_used_at=now)
            token.last_used_at = now
        return token

    def authenticate_header(self, request: Request) -> str:
        # Makes DRF answer 401 (not 403) to a write without credentials.
        return KEYWORD


class RigTokenScheme(OpenApiAuthenticationExtension):
    """Describes the rig token to drf-spectacular, so the schema and Swagger UI show it."""

    target_class = RigTokenAuthentication
    name = "rigToken"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {
            "type": "apiKey",
            "in": "header",
            "name": "Authorization",
            "description": "A rig's API token: `Token <raw token>` (issued in the admin or by `manage.py create_rig`).",
        }

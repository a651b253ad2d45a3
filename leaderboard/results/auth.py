"""API authentication for rigs: ``Authorization: Token <raw token>``.

A rig is not a Django user, so ``request.user`` stays AnonymousUser and
``request.auth`` is the RigToken; permissions (api/permissions.py) look at
``request.auth``, not at ``request.user.is_authenticated``."""

from __future__ import annotations

import functools
from datetime import timedelta
from typing import Any

from django.contrib.auth.models import AnonymousUser
from django.db import connection
from django.utils import timezone
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions
from rest_framework.request import Request

from leaderboard.results.models import Rig, RigToken
from leaderboard.results.models.rigs import hash_token
from leaderboard.results.speedups.cursor import prepared_cursor

# Writing last_used_at on every request would turn each read-heavy retry loop
# into a write; a minute is precise enough to spot a dead or leaked token.
LAST_USED_RESOLUTION = timedelta(minutes=1)
KEYWORD = "Token"


@functools.cache
def _token_statement() -> str:
    quote = connection.ops.quote_name
    columns = [f"t.{quote(f.column)}" for f in RigToken._meta.concrete_fields]
    columns += [f"r.{quote(f.column)}" for f in Rig._meta.concrete_fields]
    # Only quoted identifiers are formatted in; the hash is a parameter.
    return (
        f"SELECT {', '.join(columns)} FROM {quote(RigToken._meta.db_table)} t "  # noqa: S608
        f"JOIN {quote(Rig._meta.db_table)} r ON r.id = t.{quote('rig_id')} WHERE t.{quote('key_hash')} = %s"
    )


def token_with_rig(*, key_hash: str) -> RigToken | None:
    """Return the RigToken with ``key_hash`` and its rig (revoked or not), or None.

    Every rig request starts here: one constant statement, prepared by the
    server (results/speedups/cursor.py), instead of the ORM compiling the same join each time.
    Elsewhere than PostgreSQL (the SQLite default), the ORM: its converters
    turn SQLite's stored text back into date-times."""
    if connection.vendor != "postgresql":
        return RigToken.objects.select_related("rig").filter(key_hash=key_hash).first()
    with prepared_cursor() as cursor:
        cursor.execute(_token_statement(), [key_hash])
        row = cursor.fetchone()
    if row is None:
        return None
    token_fields, rig_fields = RigToken._meta.concrete_fields, Rig._meta.concrete_fields
    token = RigToken.from_db(connection.alias, [f.attname for f in token_fields], row[: len(token_fields)])
    token.rig = Rig.from_db(connection.alias, [f.attname for f in rig_fields], row[len(token_fields) :])
    return token


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
        token = token_with_rig(key_hash=hash_token(raw))
        if token is None:
            raise exceptions.AuthenticationFailed("Invalid token.")
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

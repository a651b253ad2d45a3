"""Who may do what: reads are public; writes need a rig token (request.auth),
and a token acts for its own rig only."""

from __future__ import annotations

from typing import Any

from rest_framework import permissions
from rest_framework.request import Request

from leaderboard.results.models import RigToken


class RigTokenOrReadOnly(permissions.BasePermission):
    """Allow safe methods to everyone and other methods to a request
    authenticated with a rig token. Staff manage data in the admin, not here."""

    message = "Submitting runs needs a rig API token: 'Authorization: Token <token>'."

    def has_permission(self, request: Request, view: Any) -> bool:
        if request.method in permissions.SAFE_METHODS:
            return True
        return isinstance(request.auth, RigToken)


def token_rig_name(request: Request) -> str | None:
    """Return the name of the rig the request's token belongs to, or None."""
    return request.auth.rig.name if isinstance(request.auth, RigToken) else None


def token_rig_id(request: Request) -> int | None:
    """Return the id of the rig the request's token belongs to, or None."""
    return request.auth.rig_id if isinstance(request.auth, RigToken) else None


def is_staff(request: Request) -> bool:
    """Return True when a signed-in staff user made the request."""
    return bool(request.user and request.user.is_authenticated and request.user.is_staff)

"""What every API view shares: JSON in and out, the rig-token permission, the error shape."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from rest_framework.authentication import BaseAuthentication
from rest_framework.pagination import BasePagination
from rest_framework.parsers import BaseParser
from rest_framework.renderers import BaseRenderer, BrowsableAPIRenderer, JSONRenderer
from rest_framework.views import APIView

from leaderboard.core.api.pagination import Pagination
from leaderboard.results.api.parsers import BoundedJSONParser
from leaderboard.results.api.permissions import RigTokenOrReadOnly
from leaderboard.results.auth import RigTokenAuthentication

if TYPE_CHECKING:  # the alias exists only in djangorestframework-stubs
    from rest_framework.permissions import _PermissionClass


class ApiMixin:
    """Class attributes every API view sets, in one place (typed as DRF's
    stubs type them, so the mixin combines with any DRF view)."""

    authentication_classes: Sequence[type[BaseAuthentication]] = [RigTokenAuthentication]
    permission_classes: Sequence[_PermissionClass] = [RigTokenOrReadOnly]
    parser_classes: Sequence[type[BaseParser]] = [BoundedJSONParser]
    renderer_classes: Sequence[type[BaseRenderer]] = [JSONRenderer, BrowsableAPIRenderer]
    pagination_class: type[BasePagination] | None = Pagination


__all__ = ["APIView", "ApiMixin"]

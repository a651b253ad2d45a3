"""What every API view shares: JSON in and out, the rig-token permission, the error shape."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from django.http import Http404
from drf_spectacular.utils import extend_schema_serializer
from rest_framework.authentication import BaseAuthentication
from rest_framework.pagination import BasePagination
from rest_framework.parsers import BaseParser
from rest_framework.renderers import BaseRenderer, BrowsableAPIRenderer, JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import BaseSerializer
from rest_framework.views import APIView

from leaderboard.core.api.pagination import Pagination
from leaderboard.results.api.parsers import BoundedJSONParser
from leaderboard.results.api.permissions import RigTokenOrReadOnly
from leaderboard.results.api.serializers.outputs import represent
from leaderboard.results.auth import RigTokenAuthentication

if TYPE_CHECKING:  # the alias exists only in djangorestframework-stubs
    from rest_framework.permissions import _PermissionClass

_Serializer = TypeVar("_Serializer", bound=BaseSerializer)


class ApiMixin:
    """Class attributes every API view sets, in one place (typed as DRF's
    stubs type them, so the mixin combines with any DRF view)."""

    authentication_classes: Sequence[type[BaseAuthentication]] = [RigTokenAuthentication]
    permission_classes: Sequence[_PermissionClass] = [RigTokenOrReadOnly]
    parser_classes: Sequence[type[BaseParser]] = [BoundedJSONParser]
    renderer_classes: Sequence[type[BaseRenderer]] = [JSONRenderer, BrowsableAPIRenderer]
    pagination_class: type[BasePagination] | None = Pagination


class CompiledListMixin:
    """A list view whose page is represented by the compiled serializer
    (``outputs.represent``, results/speedups/outputs.py) instead of DRF's
    ``Serializer(page, many=True)``: the same documents (DRF's field by field, as
    tests/results/test_compiled_outputs.py checks for every list), without DRF's
    per-field machinery, most of a 50-run page's own CPU (issue 40)."""

    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        view: Any = self
        rows = view.paginate_queryset(view.filter_queryset(view.get_queryset()))
        serializer_class = view.get_serializer_class()
        documents = [represent(serializer_class, row) for row in rows]
        return view.get_paginated_response(documents)  # type: ignore[no-any-return]


class TextLookupMixin:
    """For detail views looked up by a text path parameter: a lookup PostgreSQL
    cannot hold (a NUL, ``%00`` in the URL) matches nothing, so it is a 404."""

    lookup_field: str
    kwargs: dict[str, Any]

    def get_object(self) -> Any:
        if "\x00" in str(self.kwargs.get(self.lookup_field, "")):
            raise Http404
        return super().get_object()  # type: ignore[misc]


def schema_component(serializer_class: type[_Serializer], name: str) -> type[_Serializer]:
    """Return a subclass of ``serializer_class`` that the OpenAPI schema calls ``name``.

    One output serializer (serializers/outputs.py) may answer several endpoints;
    each endpoint names its answer in the schema without renaming the shared class."""
    named = type(serializer_class.__name__, (serializer_class,), {"__module__": serializer_class.__module__})
    return extend_schema_serializer(component_name=name)(named)


__all__ = ["APIView", "ApiMixin", "CompiledListMixin", "TextLookupMixin", "schema_component"]

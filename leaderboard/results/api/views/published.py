"""What the articles published: sources with their comparison tables,
experiments and fitted formulas (read-only; the importer writes them)."""

from __future__ import annotations

from typing import Any

from rest_framework import generics

from leaderboard.results import selectors
from leaderboard.results.api.serializers import outputs
from leaderboard.results.api.views.base import ApiMixin, CompiledListMixin, TextLookupMixin, schema_component


class SourceListApi(CompiledListMixin, ApiMixin, generics.ListAPIView):
    """List the articles reported results cite."""

    OutputSerializer = schema_component(outputs.SourceOutputSerializer, "Source")

    serializer_class = OutputSerializer

    def get_queryset(self) -> Any:
        return selectors.source_list()


class SourceDetailApi(TextLookupMixin, ApiMixin, generics.RetrieveAPIView):
    """One article with its comparison tables (rows in order), experiments and fits."""

    OutputSerializer = schema_component(outputs.SourceDetailOutputSerializer, "SourceDetail")

    serializer_class = OutputSerializer
    lookup_field = "key"

    def get_queryset(self) -> Any:
        return selectors.source_detail_queryset()

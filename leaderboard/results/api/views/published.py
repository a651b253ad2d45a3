"""What the articles published: sources with their comparison tables,
experiments and fitted formulas (read-only; the importer writes them)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_serializer
from rest_framework import generics

from leaderboard.results import selectors
from leaderboard.results.api.serializers import outputs
from leaderboard.results.api.views.base import ApiMixin, TextLookupMixin


class SourceListApi(ApiMixin, generics.ListAPIView):
    """List the articles reported results cite."""

    @extend_schema_serializer(component_name="Source")
    class OutputSerializer(outputs.SourceOutputSerializer):
        class Meta(outputs.SourceOutputSerializer.Meta):
            pass

    serializer_class = OutputSerializer

    def get_queryset(self) -> Any:
        return selectors.source_list()


class SourceDetailApi(TextLookupMixin, ApiMixin, generics.RetrieveAPIView):
    """One article with its comparison tables (rows in order), experiments and fits."""

    @extend_schema_serializer(component_name="SourceDetail")
    class OutputSerializer(outputs.SourceDetailOutputSerializer):
        class Meta(outputs.SourceDetailOutputSerializer.Meta):
            pass

    serializer_class = OutputSerializer
    lookup_field = "key"

    def get_queryset(self) -> Any:
        return selectors.source_detail_queryset()

"""Rigs: public list and detail (GPUs, CPU, OS, number of runs); tokens are never shown."""

from __future__ import annotations

from typing import Any

from django_filters.rest_framework import DjangoFilterBackend
from rest_framework import generics

from leaderboard.results import selectors
from leaderboard.results.api.filters import NullsLastOrderingFilter, RigFilter
from leaderboard.results.api.permissions import token_rig_id
from leaderboard.results.api.serializers import outputs
from leaderboard.results.api.views.base import ApiMixin, CompiledListMixin, TextLookupMixin, schema_component

RigOutputSerializer = schema_component(outputs.RigOutputSerializer, "Rig")


class RigListApi(CompiledListMixin, ApiMixin, generics.ListAPIView):
    """List rigs, filtered by name or GPU model."""

    OutputSerializer = RigOutputSerializer
    serializer_class = OutputSerializer
    filterset_class = RigFilter
    filter_backends = [DjangoFilterBackend, NullsLastOrderingFilter]
    ordering_fields = ["name", "created_at", "n_runs"]
    ordering = ["name"]

    def get_queryset(self) -> Any:
        return selectors.rig_list_public()


class RigDetailApi(TextLookupMixin, ApiMixin, generics.RetrieveAPIView):
    """One rig by name."""

    OutputSerializer = RigOutputSerializer
    serializer_class = OutputSerializer
    lookup_field = "name"

    def get_queryset(self) -> Any:
        # A rig awaiting review (or rejected) answers 404 but to its own token.
        return selectors.rig_list().visible_to(self.request.user, token_rig_id=token_rig_id(self.request))

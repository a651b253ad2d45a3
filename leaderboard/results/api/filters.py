"""Query-string filters and ordering for the list endpoints."""

from __future__ import annotations

from typing import Any

import django_filters
from django.core.exceptions import FieldDoesNotExist
from django.db.models import F, QuerySet
from rest_framework.filters import OrderingFilter
from rest_framework.request import Request

from leaderboard.results.models import Engine, Provenance, Rig, Run, RunStatus, SpeculativeType


class RunFilter(django_filters.FilterSet):
    rig = django_filters.CharFilter(field_name="rig__name", help_text="Rig name (exact).")
    gpu = django_filters.CharFilter(method="filter_gpu", help_text="GPU model, case-insensitive substring.")
    engine = django_filters.ChoiceFilter(field_name="stack__engine", choices=Engine.choices)
    build = django_filters.CharFilter(field_name="stack__build", lookup_expr="icontains", help_text="Substring.")
    model = django_filters.CharFilter(field_name="model_file__name", lookup_expr="icontains", help_text="Substring.")
    quantization = django_filters.CharFilter(field_name="model_file__quantization", lookup_expr="iexact")
    speculative_type = django_filters.ChoiceFilter(
        field_name="configuration__speculative_type", choices=SpeculativeType.choices
    )
    workload = django_filters.CharFilter(field_name="workload__name", help_text="Workload name (exact).")
    provenance = django_filters.ChoiceFilter(choices=Provenance.choices)
    status = django_filters.ChoiceFilter(choices=RunStatus.choices)
    source = django_filters.CharFilter(field_name="source__key", help_text="Source key (exact).")
    comparison_key = django_filters.CharFilter()
    created_after = django_filters.IsoDateTimeFilter(field_name="created_at", lookup_expr="gte")
    created_before = django_filters.IsoDateTimeFilter(field_name="created_at", lookup_expr="lte")

    class Meta:
        model = Run
        fields: list[str] = []

    def filter_gpu(self, queryset: QuerySet[Run], name: str, value: str) -> QuerySet[Run]:
        # A subquery rather than a join: a rig with two matching GPU groups
        # would otherwise list each of its runs twice.
        return queryset.filter(rig__in=Rig.objects.filter(gpus__model__icontains=value))


class RigFilter(django_filters.FilterSet):
    name = django_filters.CharFilter(lookup_expr="icontains")
    gpu = django_filters.CharFilter(method="filter_gpu", help_text="GPU model, case-insensitive substring.")

    class Meta:
        model = Rig
        fields: list[str] = []

    def filter_gpu(self, queryset: QuerySet[Rig], name: str, value: str) -> QuerySet[Rig]:
        return queryset.filter(pk__in=Rig.objects.filter(gpus__model__icontains=value).values("pk"))


class NullsLastOrderingFilter(OrderingFilter):
    """``?ordering=-decode_tokens_per_s_mean`` with runs that have no figure at
    the end in both directions (PostgreSQL sorts NULL first when descending),
    and the primary key as a tie-breaker so pages never overlap."""

    def filter_queryset(self, request: Request, queryset: QuerySet[Any], view: Any) -> QuerySet[Any]:
        ordering = self.get_ordering(request, queryset, view)
        if not ordering:
            return queryset
        expressions = [self._order(queryset.model, field) for field in ordering]
        return queryset.order_by(*expressions, "-pk")

    @staticmethod
    def _order(model: Any, field: str) -> Any:
        name = field.lstrip("-")
        try:
            nullable = model._meta.get_field(name).null
        except FieldDoesNotExist:  # an annotation (n_runs): may be NULL
            nullable = True
        if not nullable:
            # A column that is never NULL orders plainly: "DESC NULLS LAST" would not
            # match its index, and the default list (newest first) would sort every run.
            return F(name).desc() if field.startswith("-") else F(name).asc()
        return F(name).desc(nulls_last=True) if field.startswith("-") else F(name).asc(nulls_last=True)

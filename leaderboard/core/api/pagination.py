"""Page-number pagination with a client-chosen page size, capped."""

from __future__ import annotations

from functools import cached_property
from typing import Any

from django.core.paginator import InvalidPage, Page, Paginator
from rest_framework.pagination import PageNumberPagination
from rest_framework.response import Response


class Pagination(PageNumberPagination):
    page_size = 50
    page_size_query_param = "page_size"
    # A page of 200 runs is ~200 KB of JSON; more is a scrape, use pages.
    max_page_size = 200


class CappedPaginator(Paginator):
    """A paginator that counts at most ``COUNT_CAP`` rows: an exact count of a big
    table costs a scan of every row on each request. Past the cap (``capped``),
    any page number is served, and a full page says there may be a next one."""

    COUNT_CAP = 10_000
    capped = False

    @cached_property
    def count(self) -> int:
        # Unordered: counting needs no ORDER BY; the LIMIT stops the scan at the cap.
        found = self.object_list.order_by()[: self.COUNT_CAP + 1].count()  # type: ignore[attr-defined]
        self.capped = found > self.COUNT_CAP
        return min(found, self.COUNT_CAP)

    def validate_number(self, number: Any) -> int:
        if self.count and self.capped:
            value = int(number) if str(number).isdigit() else 0
            if value < 1:
                raise InvalidPage("That page number is not a positive integer.")
            return value
        return super().validate_number(number)

    def page(self, number: Any) -> Page[Any]:
        number = self.validate_number(number)
        if not self.capped:
            return super().page(number)
        bottom = (number - 1) * self.per_page
        return self._get_page(self.object_list[bottom : bottom + self.per_page], number, self)

    def _get_page(self, *args: Any, **kwargs: Any) -> Page[Any]:
        return _CappedPage(*args, **kwargs)


class _CappedPage(Page[Any]):
    def has_next(self) -> bool:
        paginator = self.paginator
        if getattr(paginator, "capped", False):
            return len(self.object_list) >= paginator.per_page
        return super().has_next()


class CappedPagination(Pagination):
    """Pagination for the big lists (GET /api/runs/): ``count`` is at most
    ``CappedPaginator.COUNT_CAP`` and ``count_capped`` says there are more."""

    django_paginator_class = CappedPaginator

    def get_paginated_response(self, data: Any) -> Response:
        response = super().get_paginated_response(data)
        response.data["count_capped"] = bool(getattr(self.page.paginator, "capped", False))  # type: ignore[union-attr]
        return response

    def get_paginated_response_schema(self, schema: dict[str, Any]) -> dict[str, Any]:
        document = super().get_paginated_response_schema(schema)
        document["properties"]["count_capped"] = {
            "type": "boolean",
            "description": f"True when more than {CappedPaginator.COUNT_CAP} match: count stops there.",
        }
        return document

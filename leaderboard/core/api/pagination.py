"""Page-number pagination with a client-chosen page size, capped."""

from __future__ import annotations

from rest_framework.pagination import PageNumberPagination


class Pagination(PageNumberPagination):
    page_size = 50
    page_size_query_param = "page_size"
    # A page of 200 runs is ~200 KB of JSON; more is a scrape, use pages.
    max_page_size = 200

"""Page-number pagination with a client-chosen page size, capped; and, for the big
lists, a cursor that walks every row once (``CursorOrPagePagination``)."""

from __future__ import annotations

import base64
import binascii
from typing import Any

from django.core.paginator import InvalidPage, Page
from rest_framework.exceptions import ValidationError
from rest_framework.pagination import PageNumberPagination
from rest_framework.response import Response
from rest_framework.utils.urls import replace_query_param

from leaderboard.core.paging import CappedCountPaginator


class Pagination(PageNumberPagination):
    page_size = 50
    page_size_query_param = "page_size"
    # A page of 200 runs is ~200 KB of JSON; more is a scrape, use pages.
    max_page_size = 200


class CappedPaginator(CappedCountPaginator):
    """The API lists' capped count: past the cap (``capped``), any page number is
    served, and a full page says there may be a next one."""

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


class CursorOrPagePagination(CappedPagination):
    """Page numbers (``?page=``, as before) or, when the query has ``cursor`` (empty:
    the first page), a cursor that walks every row once by primary key: each answer's
    ``next`` (and ``next_cursor``) goes on after its last row, however many rows are
    added meanwhile, at the cost of one index range per page however deep (page
    numbers pay an OFFSET scan). Cursor pages are in id order: ``ordering`` and
    ``page`` are refused beside a cursor. New rows come after the last cursor: a
    mirror keeps it and asks again later."""

    cursor_query_param = "cursor"
    # A cursor page reads one index range: larger pages than ?page= allows are cheap.
    cursor_max_page_size = 1000
    cursor_mode = False

    def paginate_queryset(self, queryset: Any, request: Any, view: Any = None) -> list[Any] | None:
        if self.cursor_query_param not in request.query_params:
            self.cursor_mode = False
            return super().paginate_queryset(queryset, request, view)
        self.cursor_mode = True
        self.request = request
        for refused in ("ordering", self.page_query_param):
            if request.query_params.get(refused):
                raise ValidationError(
                    {refused: [f"Not with a cursor: cursor pages are in id order; drop {refused} or the cursor."]}
                )
        after = decode_cursor(request.query_params.get(self.cursor_query_param, ""))
        size = self._cursor_page_size(request)
        rows = queryset.order_by("pk")
        if after is not None:
            rows = rows.filter(pk__gt=after)
        page = list(rows[: size + 1])
        self.next_cursor = encode_cursor(page[size - 1].pk) if len(page) > size else None
        return page[:size]

    def _cursor_page_size(self, request: Any) -> int:
        raw = request.query_params.get(self.page_size_query_param)
        if raw is None or raw == "":
            return int(self.page_size)
        try:
            value = int(raw)
        except ValueError:
            value = 0
        if value < 1:
            raise ValidationError({self.page_size_query_param: ["A whole number of at least 1."]})
        return min(value, self.cursor_max_page_size)

    def get_paginated_response(self, data: Any) -> Response:
        if not self.cursor_mode:
            return super().get_paginated_response(data)
        next_link = None
        if self.next_cursor is not None and self.request is not None:
            url = self.request.build_absolute_uri()
            next_link = replace_query_param(url, self.cursor_query_param, self.next_cursor)
        return Response({"next": next_link, "next_cursor": self.next_cursor, "results": data})

    def get_paginated_response_schema(self, schema: dict[str, Any]) -> dict[str, Any]:
        document = super().get_paginated_response_schema(schema)
        document["properties"]["next_cursor"] = {
            "type": "string",
            "nullable": True,
            "description": "With ?cursor=: the next page's cursor (null on the last); no count or previous then.",
        }
        # A cursor page has no count: only the results are always there.
        document["required"] = ["results"]
        return document

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        parameters = super().get_schema_operation_parameters(view)
        parameters.append(
            {
                "name": self.cursor_query_param,
                "required": False,
                "in": "query",
                "description": "Page by cursor instead of page number: empty for the first page, then the "
                "answer's next_cursor. Runs come in id order; ordering and page are refused with it; "
                f"page_size up to {self.cursor_max_page_size}.",
                "schema": {"type": "string"},
            }
        )
        return parameters


_CURSOR_PREFIX = "after:"


def encode_cursor(pk: int) -> str:
    """Return the opaque cursor that starts after primary key ``pk``."""
    return base64.urlsafe_b64encode(f"{_CURSOR_PREFIX}{int(pk)}".encode()).decode().rstrip("=")


def decode_cursor(raw: str) -> int | None:
    """Return the primary key a cursor starts after (None: the first page, an empty
    cursor); raise a ValidationError naming ``cursor`` for one this API did not write."""
    if raw == "":
        return None
    try:
        text = base64.urlsafe_b64decode(raw + "=" * (-len(raw) % 4)).decode("ascii")
        if not text.startswith(_CURSOR_PREFIX) or not text[len(_CURSOR_PREFIX) :].isdigit():
            raise ValueError(text)
        value = int(text[len(_CURSOR_PREFIX) :])
    except (ValueError, UnicodeDecodeError, binascii.Error):
        raise ValidationError({"cursor": ["Not a cursor this API gave: use next_cursor from an answer."]}) from None
    if value > 2**63 - 1:
        raise ValidationError({"cursor": ["Not a cursor this API gave: use next_cursor from an answer."]})
    return value

"""A paginator whose count stops at a cap: the one count the board and the API lists share."""

from __future__ import annotations

from functools import cached_property
from typing import Any

from django.core.paginator import Paginator
from django.db.models import QuerySet


class CappedCountPaginator(Paginator):
    """A paginator that counts at most ``count_cap`` rows (``COUNT_CAP`` unless given): an
    exact count of a big match costs a scan of every matching row on each request, while
    nobody pages through 10,000 of them. ``capped`` says the true count is larger.
    ``counted``, when given, is counted instead of the object list: a queryset with as
    many rows, cheaper to count (the board's best run of each group counts its groups)."""

    COUNT_CAP = 10_000
    capped = False

    def __init__(
        self, *args: Any, count_cap: int | None = None, counted: QuerySet[Any, Any] | None = None, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self.count_cap = self.COUNT_CAP if count_cap is None else count_cap
        self.counted = counted

    @cached_property
    def count(self) -> int:
        # Unordered: counting needs no ORDER BY (PostgreSQL then counts from a covering
        # index); the LIMIT stops the scan at the cap.
        counted = self.object_list if self.counted is None else self.counted
        found = counted.order_by()[: self.count_cap + 1].count()  # type: ignore[attr-defined]
        self.capped = found > self.count_cap
        return min(found, self.count_cap)

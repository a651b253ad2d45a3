"""The leaderboard's exports: /leaderboard.csv, .json and .ndjson, each the whole
filtered set the page with the same query string ranks, streamed."""

from __future__ import annotations

from itertools import chain, islice

from django.http import HttpRequest, HttpResponse, JsonResponse, StreamingHttpResponse
from django.http.response import HttpResponseBase
from django.views.decorators.http import require_GET

from leaderboard.boards.exports import rows_csv, rows_json, rows_ndjson
from leaderboard.boards.selectors.leaderboard import export_rows, leaderboard_export, leaderboard_query
from leaderboard.core.conditional import conditional_on_data


def _export(request: HttpRequest, kind: str) -> HttpResponseBase:
    """Stream the whole filtered set the leaderboard for the request's query string
    ranks (every page, its default workload too), as ``kind``: csv, json or ndjson; a bad
    filter is a 400 naming it."""
    export = leaderboard_export(leaderboard_query(request.GET))
    if export.ids is None:
        if kind == "csv":
            return HttpResponse(export.form.errors.as_text(), status=400, content_type="text/plain; charset=utf-8")
        return JsonResponse({"errors": export.form.errors}, status=400)
    streamed = export_rows(export.ids, usd_per_kwh=export.usd_per_kwh)
    # The first chunk is read before the answer starts: a query that fails is a 500
    # here, not a 200 whose body stops short.
    first = list(islice(streamed, 1))
    rows = chain(first, streamed)
    if kind == "csv":
        response = StreamingHttpResponse(rows_csv(rows), content_type="text/csv; charset=utf-8")
    elif kind == "ndjson":
        response = StreamingHttpResponse(rows_ndjson(rows), content_type="application/x-ndjson; charset=utf-8")
    else:
        meta = {
            "sort": export.sort,
            "usd_per_kwh": export.usd_per_kwh,
            "filters": {k: v for k, v in request.GET.items() if k not in ("page", "per_page", "sort") and v},
        }
        response = StreamingHttpResponse(rows_json(rows, meta=meta), content_type="application/json")
    response["Content-Disposition"] = f'attachment; filename="rigboard-leaderboard.{kind}"'
    return response


@require_GET
@conditional_on_data
def leaderboard_csv(request: HttpRequest) -> HttpResponseBase:
    return _export(request, "csv")


@require_GET
@conditional_on_data
def leaderboard_json(request: HttpRequest) -> HttpResponseBase:
    return _export(request, "json")


@require_GET
@conditional_on_data
def leaderboard_ndjson(request: HttpRequest) -> HttpResponseBase:
    """The leaderboard's rows one JSON object a line, streamed: a script mirrors the board with it."""
    return _export(request, "ndjson")

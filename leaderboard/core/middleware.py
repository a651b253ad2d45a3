"""Site-wide request and answer rules: no NUL in a URL, a Content-Security-Policy header.

Requests whose URL carries text PostgreSQL cannot store or compare:
A NUL character (``%00``) in the path or a query parameter reaches the database
as part of a lookup (``/gpus/%00/``, ``?rig=%00``), and PostgreSQL refuses any
string with one: a DataError, answered 500. No name, filter or key of the site
holds one, so such a request is refused here, once for every page and endpoint:
a path with one names nothing (404), a query parameter with one is a 400 naming
it (the API's error shape under /api/)."""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBadRequest, JsonResponse


def _nul_in(request: HttpRequest) -> str | None:
    """Return the query parameter that carries a NUL, None when none does."""
    for key, values in request.GET.lists():
        if "\x00" in key or any("\x00" in value for value in values):
            return key.replace("\x00", "\\x00")
    return None


class NullCharacterMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if "\x00" in request.path:
            # Nothing of the site is named with one: the page does not exist (the site's or the API's 404).
            raise Http404("no such page")
        where = _nul_in(request)
        if where is None:
            return self.get_response(request)
        message = "Null characters are not allowed."
        if request.path.startswith("/api/"):
            return JsonResponse({"errors": {where: [message]}}, status=400)
        return HttpResponseBadRequest(f"{where}: {message}", content_type="text/plain; charset=utf-8")


class ContentSecurityPolicyMiddleware:
    """Send ``settings.RIGBOARD_CONTENT_SECURITY_POLICY`` on every answer that has none.

    The site's pages run only its own scripts, from files (charts are JSON read by
    static/boards/charts.js; Plotly and Swagger UI are served locally), so scripts
    need neither 'unsafe-inline' nor a nonce; a string a user slipped into a page
    cannot run. Styles keep 'unsafe-inline': Plotly writes its own style rules."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        policy = settings.RIGBOARD_CONTENT_SECURITY_POLICY
        if policy and "Content-Security-Policy" not in response:
            response["Content-Security-Policy"] = policy
        return response

"""The site's own 404 page also where DEBUG is on (``make demo``, the tests)."""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse

from leaderboard.boards.views import page_not_found

# What only Django's technical 404 page says; a 404 the site renders itself never does.
_TECHNICAL_404_MARK = b"DEBUG = True</code>"


class SiteNotFoundMiddleware:
    """With DEBUG on, Django answers an unknown page with its technical 404, which lists
    every URL pattern; the demo's visitor gets the site's page instead, as in production.
    Tracebacks on 500s stay (they are what DEBUG is on for)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if (
            settings.DEBUG
            and response.status_code == 404
            and not getattr(response, "streaming", False)
            and _TECHNICAL_404_MARK in response.content
        ):
            return page_not_found(request)
        return response

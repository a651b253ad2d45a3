"""Request bodies sent with ``Transfer-Encoding: chunked`` (no Content-Length).

Django reads exactly CONTENT_LENGTH bytes of a request body, so a chunked POST
reaches a view as an empty body (a valid run got "uuid: required") and never
meets the size limit. A server that de-chunks the body and marks its end
(``wsgi.input_terminated``: gunicorn, uWSGI, mod_wsgi) lets us read it here, up
to the largest body limit (RIGBOARD_LLAMA_BENCH_MAX_BYTES for a llama-bench file),
and hand it on with its length declared: the endpoint's parser applies its own limit."""

from __future__ import annotations

import io
from collections.abc import Callable

from django.conf import settings
from django.core.handlers.wsgi import LimitedStream
from django.http import HttpRequest, HttpResponse, JsonResponse


class ChunkedBodyMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        meta = request.META
        chunked = "chunked" in meta.get("HTTP_TRANSFER_ENCODING", "").lower()
        if chunked and not meta.get("CONTENT_LENGTH"):
            if not meta.get("wsgi.input_terminated"):
                # A server that cannot tell where the body ends (runserver):
                # refuse rather than read an empty body or block.
                return _error(411, "A chunked body is not supported here; send a Content-Length.")
            # The largest body any endpoint takes: each parser then holds the body to
            # its own limit through the length declared below, so a chunked body and
            # the same body with a Content-Length meet the same limit.
            limit = max(settings.RIGBOARD_MAX_BODY_BYTES, settings.RIGBOARD_LLAMA_BENCH_MAX_BYTES)
            body = meta["wsgi.input"].read(limit + 1)
            if len(body) > limit:
                return _error(413, f"The request body is over the limit of {limit} bytes.")
            meta["CONTENT_LENGTH"] = str(len(body))
            request._stream = LimitedStream(io.BytesIO(body), len(body))  # type: ignore[assignment]
        return self.get_response(request)


def _error(status: int, message: str) -> JsonResponse:
    # The API's error shape (core/api/errors.py); the connection is closed
    # because the rest of the body is left unread.
    response = JsonResponse({"errors": {"body": [message]}}, status=status)
    response["Connection"] = "close"
    return response

"""Every API error body has one shape: ``{"errors": {"<field path>": ["why", …]}}``.

Field paths are dotted, with 0-based list positions: ``samples.3.draft_n_accepted``
is the fourth sample's accepted-draft count. Errors that belong to no field use
the key ``detail`` (auth, permissions, not found) or ``body`` (the request body
as a whole: malformed JSON, too large)."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from django import db
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig
from django.http import Http404, HttpResponse, JsonResponse
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.settings import api_settings
from rest_framework.views import set_rollback

from leaderboard.core.errors import ApplicationError

logger = logging.getLogger(__name__)


class RequestTooLarge(exceptions.APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_detail = "The request body is too large."
    default_code = "too_large"


def flatten_errors(detail: Any, prefix: str = "") -> dict[str, list[str]]:
    """Return DRF's nested error detail as ``{"dotted.path": ["message", …]}``.

    Nested serializers give dicts, list serializers dicts keyed by position (or
    lists with ``{}`` for valid items); both become path segments. Non-field
    errors of a nested object are reported under the object's own path."""
    out: dict[str, list[str]] = {}
    if isinstance(detail, Mapping):
        for key, value in detail.items():
            if key in (api_settings.NON_FIELD_ERRORS_KEY, "non_field_errors"):
                path = prefix or "body"
            else:
                path = f"{prefix}.{key}" if prefix else str(key)
            for sub_path, messages in flatten_errors(value, path).items():
                out.setdefault(sub_path, []).extend(messages)
    elif isinstance(detail, list) and any(isinstance(item, (Mapping, list)) for item in detail):
        for position, item in enumerate(detail):
            if item:
                for sub_path, messages in flatten_errors(
                    item, f"{prefix}.{position}" if prefix else str(position)
                ).items():
                    out.setdefault(sub_path, []).extend(messages)
    elif isinstance(detail, list):
        out[prefix or "body"] = [str(message) for message in detail]
    else:
        out[prefix or "detail"] = [str(detail)]
    return out


def _renderable(text: str) -> str:
    """Return ``text`` with lone UTF-16 surrogates written as ``\\udfff``: an
    error may quote a key or value the client sent, and UTF-8 (the renderer's
    output) cannot encode a surrogate."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def error_response(errors: dict[str, list[str]], status_code: int, headers: dict[str, str] | None = None) -> Response:
    safe = {_renderable(path): [_renderable(str(m)) for m in messages] for path, messages in errors.items()}
    return Response({"errors": safe}, status=status_code, headers=headers)


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """Turn ApplicationError, DRF's exceptions, Django's 404/403/body-too-big and
    a database that cannot be reached (503) into ``{"errors": …}`` answers;
    return None (a 500) for anything else."""
    if isinstance(exc, ApplicationError):
        set_rollback()
        return error_response({exc.field or "detail": [exc.message]}, exc.status_code)
    if isinstance(exc, (db.OperationalError, db.InterfaceError)):
        # PostgreSQL is down or restarting (a connection the health check found
        # alive died since): the request may succeed in a moment, and clients
        # (the runner spools and retries) should hear that, not "a bug".
        logger.warning("database unavailable: %s", exc)
        return error_response(
            {"detail": ["The database is unavailable; retry shortly."]},
            status.HTTP_503_SERVICE_UNAVAILABLE,
            {"Retry-After": "5"},
        )
    if isinstance(exc, RequestDataTooBig):
        # Django raises this when something reads request.body past
        # DATA_UPLOAD_MAX_MEMORY_SIZE; it is a SuspiciousOperation, which Django
        # would otherwise answer with an HTML 400.
        exc = RequestTooLarge()
    elif isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied(*exc.args)
    if not isinstance(exc, exceptions.APIException):
        return None
    headers: dict[str, str] = {}
    if getattr(exc, "auth_header", None):
        headers["WWW-Authenticate"] = str(exc.auth_header)  # type: ignore[attr-defined]
    if getattr(exc, "wait", None):
        headers["Retry-After"] = f"{int(exc.wait)}"  # type: ignore[attr-defined]
    if isinstance(exc, exceptions.ValidationError):
        errors = flatten_errors(exc.detail)
    elif isinstance(exc, (exceptions.ParseError, RequestTooLarge, exceptions.UnsupportedMediaType)):
        errors = {"body": [str(exc.detail)]}
    else:
        errors = (
            flatten_errors(exc.detail, "detail")
            if isinstance(exc.detail, (dict, list))
            else {"detail": [str(exc.detail)]}
        )
    set_rollback()
    return error_response(errors, exc.status_code, headers)


def api_not_found() -> HttpResponse:
    """The 404 for a URL under /api/ that no route matches (``/api/jobs/abc/``): the
    API's error shape, as JSON. The site's ``handler404`` answers with it there."""
    return JsonResponse({"errors": {"detail": ["Not found."]}}, status=404)

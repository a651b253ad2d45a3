"""The one error a service raises for a request it understood but refuses."""

from __future__ import annotations


class ApplicationError(Exception):
    """A request the service understood but refuses; ``field`` names the culprit.

    The API's exception handler (core/api/errors.py) answers it with
    ``{"errors": {field: [message]}}`` and ``status_code``; admin actions and
    commands show ``message``."""

    def __init__(self, message: str, *, field: str | None = None, status_code: int = 400) -> None:
        super().__init__(message)
        self.message = message
        self.field = field
        self.status_code = status_code

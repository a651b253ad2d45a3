"""A cursor for the few hot statements written in SQL (ingest, token lookup)."""

from __future__ import annotations

from typing import Any

import psycopg
from django.db import connection


def prepared_cursor() -> Any:
    """Return a cursor on Django's own connection (same transaction) that binds
    parameters on the server, so psycopg prepares a statement it sees a few
    times and PostgreSQL neither parses nor plans it again. It is wrapped as
    connection.cursor() wraps its own: Django's error classes, query logging
    and execute wrappers apply. Elsewhere than PostgreSQL: connection.cursor()."""
    if connection.vendor != "postgresql":
        return connection.cursor()
    # What connection.cursor() does first: a pooled connection that PostgreSQL
    # dropped (a restart) is replaced, not used. The token lookup is every
    # authenticated request's first query, so skipping this would answer 503.
    connection.close_if_health_check_failed()
    connection.ensure_connection()
    return connection._prepare_cursor(psycopg.Cursor(connection.connection))  # type: ignore[attr-defined]

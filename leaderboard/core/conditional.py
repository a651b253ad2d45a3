"""Conditional GET for pages and exports drawn from the database: a reload when
nothing changed is answered 304 before a query of the page runs.

The validator is PostgreSQL's current snapshot (``pg_current_snapshot()``:
xmin, xmax and the transactions in progress). It changes when any transaction
is given an id (every write: a run posted, a rig reviewed, a bulk COPY, an admin
edit) and when one ends, and not for reads; a page rendered after the validator
was read shows that snapshot's data or newer, so an ETag never vouches for data
older than the page it was sent with. Transaction ids are the cluster's: any
write anywhere in it (another database, autovacuum's ANALYZE) renders the next
request afresh, the cost of never being stale. The ETag also holds the viewer
(what a signed-in owner or staff member sees differs), the address with its
query, and the code's version as its pages show it (the static manifest, which
names every hashed CSS and JS file, and the newest template): a deploy renders
afresh though the data did not change. Where the database cannot say this cheaply (SQLite, the embedded demo),
there is no ETag and every request renders.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import connection
from django.http import HttpRequest
from django.utils.cache import patch_cache_control, patch_vary_headers
from django.views.decorators.http import condition

View = Callable[..., Any]


def data_version() -> str | None:
    """Return the database's current snapshot as text, or None where it has none to give."""
    if connection.vendor != "postgresql":
        return None
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_current_snapshot()::text")
        row = cursor.fetchone()
    return str(row[0]) if row else None


@functools.cache
def _code_version() -> str:
    """Return the static manifest's hash and the newest template's time, read once per process."""
    manifest = Path(settings.STATIC_ROOT or ".") / "staticfiles.json"
    static = hashlib.sha256(manifest.read_bytes()).hexdigest()[:12] if manifest.is_file() else ""
    engines: list[dict[str, Any]] = list(settings.TEMPLATES)
    templates = [Path(d) for engine in engines for d in engine.get("DIRS", [])]
    newest = max((p.stat().st_mtime_ns for d in templates for p in d.rglob("*.html")), default=0)
    return f"{static}:{newest}"


def _etag(request: HttpRequest, *args: Any, **kwargs: Any) -> str | None:
    version = data_version()
    if version is None:
        return None
    user = request.user
    viewer = f"{user.pk}:{int(user.is_staff)}" if user.is_authenticated else "anonymous"
    return hashlib.sha256(f"{version}|{_code_version()}|{viewer}|{request.get_full_path()}".encode()).hexdigest()[:32]


def conditional_on_data(view: View) -> View:
    """Answer a GET whose If-None-Match holds the current ETag with 304, unrendered;
    else render and send the ETag, to be checked again on every use (``no-cache``),
    kept by the visitor's browser only when signed in (``private``)."""
    checked = condition(etag_func=_etag)(view)

    @functools.wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
        response = checked(request, *args, **kwargs)
        if response.status_code != 200:
            del response["ETag"]  # a refusal or an error is not to be answered 304 next time
        elif response.has_header("ETag"):
            patch_cache_control(response, no_cache=True, private=request.user.is_authenticated)
            patch_vary_headers(response, ["Cookie"])
        return response

    return wrapped

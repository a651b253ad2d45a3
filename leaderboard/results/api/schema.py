"""The OpenAPI schema's error answers, declared where endpoints give them.

Every endpoint answers errors in one shape (core/api/errors.py); rather than
repeat the same responses on every view, this drf-spectacular post-processing
hook adds them by what an operation has: a request body (400, 413), query
parameters (400), path parameters or a page number (404), a token or session it
needs (401, 403), a write (429), and 503 on all (the database unavailable). Responses a view
declares itself keep their description and get the error body's schema."""

from __future__ import annotations

from typing import Any

ERROR_SCHEMA = {
    "type": "object",
    "properties": {
        "errors": {
            "type": "object",
            "description": 'Messages by dotted field path (``samples.1.index``), or by "detail" / "body".',
            "additionalProperties": {"type": "array", "items": {"type": "string"}},
        }
    },
    "required": ["errors"],
}
_WHY = {
    "400": "Bad input: each bad field named with why.",
    "401": "No valid rig token (or session).",
    "403": "Not allowed with this token or session.",
    "404": "No such object (or no such page).",
    "413": "The body is over RIGBOARD_MAX_BODY_BYTES.",
    "429": "Too many writes for this token or account: retry after Retry-After seconds.",
    "503": "The database is unavailable (restarting): retry after Retry-After seconds.",
}
_METHODS = {"get", "post", "put", "patch", "delete"}


def _public(operation: dict[str, Any], method: str, path: str) -> bool:
    # Reads of runs, rigs and sources are public; jobs and every write are not.
    return method == "get" and not path.startswith("/api/jobs/")


def declare_errors(result: dict[str, Any], generator: Any, request: Any, public: bool) -> dict[str, Any]:
    """Add the ``Error`` component and each operation's error responses to the schema ``result``."""
    result.setdefault("components", {}).setdefault("schemas", {})["Error"] = ERROR_SCHEMA
    body = {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
    for path, operations in result.get("paths", {}).items():
        for method, operation in operations.items():
            if method not in _METHODS:
                continue
            parameters = operation.get("parameters", [])
            codes = set()
            if "requestBody" in operation:
                codes |= {"400", "413"}
            if any(p.get("in") == "query" for p in parameters):
                codes.add("400")
            # A path parameter that names nothing, or a page past the last.
            if any(p.get("in") == "path" or p.get("name") == "page" for p in parameters):
                codes.add("404")
            if not _public(operation, method, path):
                codes |= {"401", "403"}
            if method != "get":  # any write may be refused, and writes are throttled
                codes |= {"400", "429"}
            codes.add("503")
            responses = operation.setdefault("responses", {})
            for code in sorted(codes | {c for c in responses if c[0] in "45"}):
                declared = responses.setdefault(code, {})
                if not declared.get("description"):
                    declared["description"] = _WHY.get(code, "")
                declared["content"] = body
    return result

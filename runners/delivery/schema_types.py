"""The field types of the run payload (runners/delivery/schema.py) and the wording of their errors.

A JSON API takes JSON's own types: a figure must be a JSON number, text a JSON
string, a flag true or false. Looser readers turn ``"12.5"`` into 12.5 and
``"yes"`` into true, so a runner's type bug would be stored as something else;
here it is a 400 naming the field. Messages keep the wording the API has always
used (Django REST framework's, docs/api.md), so clients and tests read the
same answers; ``field_errors`` turns a pydantic ValidationError into
``{"dotted.path": ["why", …]}``, the API's error shape."""

from __future__ import annotations

import datetime as dt
import math
import uuid
from collections.abc import Callable, Iterable
from typing import Annotated, Any

from pydantic import BeforeValidator, ValidationError
from pydantic_core import InitErrorDetails, PydanticCustomError

REQUIRED = "This field is required."
NOT_NULL = "This field may not be null."
DATETIME_FORMAT = "YYYY-MM-DDThh:mm[:ss[.uuuuuu]][+HH:MM|-HH:MM|Z]"


def json_type(value: Any) -> str:
    """Return the JSON name of a parsed value's type, for error messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def fail(message: str) -> PydanticCustomError:
    """Return an error whose message is final (no ``{placeholders}`` filled in)."""
    return PydanticCustomError("rigboard", message)


def _not_null(value: Any) -> None:
    # Reached only by fields that do not take null: nullable ones answer None before.
    if value is None:
        raise fail(NOT_NULL)


def _number(value: Any) -> Any:
    if type(value) is float and math.isfinite(value):  # nearly every number of a run: answered first
        return value
    _not_null(value)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise fail(f"A number is required, not {json_type(value)}.")
    if isinstance(value, int):
        try:
            float(value)
        except OverflowError:
            raise fail("A valid number is required.") from None
    elif not math.isfinite(value):
        raise fail("A valid number is required.")
    return value


def _whole(value: Any) -> Any:
    _number(value)
    if isinstance(value, float):
        if not value.is_integer():
            raise fail("A whole number is required.")
        return int(value)
    return value


def _check_text(value: Any) -> str:
    _not_null(value)
    if not isinstance(value, str):
        raise fail(f"A string is required, not {json_type(value)}.")
    if "\x00" in value:
        raise fail("Null characters are not allowed.")
    if not value.isascii():
        for char in value:
            if 0xD800 <= ord(char) <= 0xDFFF:
                raise fail(f"Surrogate characters are not allowed: U+{ord(char):X}.")
    return value


def check_text(value: Any) -> str:
    """Return ``value`` when it is a string PostgreSQL can store (no NUL, no lone surrogate); raise otherwise."""
    return _check_text(value)


def _text(value: Any) -> str:
    return _check_text(value)


def _filled_text(value: Any) -> str:
    if _check_text(value) == "":
        raise fail("This field may not be blank.")
    return value


def _trimmed_text(value: Any) -> str:
    return _check_text(value).strip()


def _filled_trimmed_text(value: Any) -> str:
    stripped = _trimmed_text(value)
    if stripped == "":
        raise fail("This field may not be blank.")
    return stripped


def _boolean(value: Any) -> bool:
    _not_null(value)
    if not isinstance(value, bool):
        raise fail(f"A boolean (true or false) is required, not {json_type(value)}.")
    return value


def _uuid(value: Any) -> uuid.UUID:
    _not_null(value)
    if not isinstance(value, str):
        raise fail(f"A UUID string is required, not {json_type(value)}.")
    try:
        return uuid.UUID(hex=value)
    except ValueError:
        raise fail("Must be a valid UUID.") from None


def _aware_datetime(value: Any) -> dt.datetime:
    """An ISO 8601 string with a time zone (``Z`` or ``+02:00``), returned in UTC.

    A naive datetime would be read in the server's time zone, silently moving a
    rig's timestamps by its UTC offset; offsets PostgreSQL cannot store (beyond
    ±15:59) are fine because the value is converted to UTC."""
    _not_null(value)
    if not isinstance(value, str):
        raise fail(f"A datetime string is required, not {json_type(value)}.")
    try:
        parsed = dt.datetime.fromisoformat(value)
    except ValueError:
        raise fail(f"Datetime has wrong format. Use one of these formats instead: {DATETIME_FORMAT}.") from None
    if parsed.tzinfo is None:
        raise fail("The datetime needs a time zone, e.g. 2026-11-21T21:00:00Z or +02:00.")
    try:
        return parsed.astimezone(dt.UTC)
    except OverflowError:
        raise fail("Datetime value out of range.") from None


def _json_object(value: Any) -> dict[str, Any]:
    _not_null(value)
    if not isinstance(value, dict):
        raise fail("A JSON object is required.")
    return value


def json_shape(value: Any) -> tuple[int, int]:
    """Return ``(depth, size in bytes as compact JSON)`` of a parsed JSON document,
    walked without recursion (a document nested 100k deep must not overflow the stack)."""
    depth, size = 0, 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, level = stack.pop()
        depth = max(depth, level)
        if isinstance(node, dict):
            size += 2 + max(len(node) - 1, 0)
            for key, item in node.items():
                size += len(str(key).encode("utf-8", "surrogatepass")) + 3
                stack.append((item, level + 1))
        elif isinstance(node, list):
            size += 2 + max(len(node) - 1, 0)
            stack.extend((item, level + 1) for item in node)
        elif isinstance(node, str):
            size += len(node.encode("utf-8", "surrogatepass")) + 2
        else:
            size += len(repr(node))
    return depth, size


def bounded_json(*, max_depth: int, max_bytes: int) -> BeforeValidator:
    """Return a check that a JSON object nests at most ``max_depth`` levels (the object
    itself is level 1) and takes at most ``max_bytes`` as compact JSON: a page prints
    what is stored, and a small body of deeply nested brackets becomes a huge page."""

    def check(value: Any) -> dict[str, Any]:
        _json_object(value)
        depth, size = json_shape(value)
        if depth > max_depth:
            raise fail(f"Nested {depth} levels deep; at most {max_depth}.")
        if size > max_bytes:
            raise fail(f"{size} bytes as JSON; at most {max_bytes}.")
        return value

    return BeforeValidator(check)


def _list(value: Any) -> list[Any]:
    _not_null(value)
    if not isinstance(value, list):
        raise fail(f'Expected a list of items but got type "{type(value).__name__}".')
    return value


def one_of(allowed: Iterable[str]) -> Callable[[Any], str]:
    """Return a check that ``value`` is one of ``allowed`` (the API's enum wording)."""
    values = tuple(allowed)
    listed = ", ".join(values)

    def check(value: Any) -> str:
        _not_null(value)
        if not isinstance(value, str) or value not in values:
            raise fail(f'"{value}" is not one of: {listed}.')
        return value

    return check


# The types the payload's fields are made of; bounds and lengths are set per field (Field(ge=…, le=…)).
Number = Annotated[float, BeforeValidator(_number)]
Whole = Annotated[int, BeforeValidator(_whole)]
Text = Annotated[str, BeforeValidator(_text)]
FilledText = Annotated[str, BeforeValidator(_filled_text)]
TrimmedText = Annotated[str, BeforeValidator(_trimmed_text)]
FilledTrimmedText = Annotated[str, BeforeValidator(_filled_trimmed_text)]
Boolean = Annotated[bool, BeforeValidator(_boolean)]
UUIDString = Annotated[uuid.UUID, BeforeValidator(_uuid)]
AwareDatetime = Annotated[dt.datetime, BeforeValidator(_aware_datetime)]
JSONObject = Annotated[dict[str, Any], BeforeValidator(_json_object)]
ListOf = BeforeValidator(_list)  # put before a list type: the API's "not a list" wording


def _message(error: Any) -> str:
    """Return the API's wording for one of pydantic's own errors (bounds, lengths, missing)."""
    kind, ctx, value = error["type"], error.get("ctx") or {}, error.get("input")
    if kind == "rigboard":
        return str(error["msg"])
    if kind == "missing":
        return REQUIRED
    if kind == "greater_than_equal":
        return f"Ensure this value is greater than or equal to {ctx['ge']}."
    if kind == "greater_than":
        return f"Ensure this value is greater than {ctx['gt']}."
    if kind == "less_than_equal":
        return f"Ensure this value is less than or equal to {ctx['le']}."
    if kind == "string_too_long":
        return f"Ensure this field has no more than {ctx['max_length']} characters."
    if kind == "too_long":
        return f"Ensure this field has no more than {ctx['max_length']} elements."
    if kind == "string_pattern_mismatch":
        return "This value does not match the required pattern."
    if kind == "extra_forbidden":
        return "Unknown field."
    if kind in ("model_type", "model_attributes_type", "dict_type"):
        if value is None:
            return NOT_NULL
        return f"Invalid data. Expected a dictionary, but got {type(value).__name__}."
    return str(error["msg"])


def field_errors(exc: ValidationError) -> dict[str, list[str]]:
    """Return ``exc`` as ``{"dotted.path": ["why", …]}`` (``body`` for the document
    itself), in the API's wording: ``samples.3.draft_n_accepted``."""
    out: dict[str, list[str]] = {}
    for error in exc.errors(include_url=False):
        path = ".".join(str(part) for part in error["loc"]) or "body"
        out.setdefault(path, []).append(_message(error))
    return out


def final(exc: ValidationError) -> list[InitErrorDetails]:
    """Return ``exc``'s errors with their final wording, ready to raise again
    (``ValidationError.from_exception_data``) under other errors' company."""
    return [
        {"type": fail(_message(error)), "loc": error["loc"], "input": error.get("input")}
        for error in exc.errors(include_url=False)
    ]

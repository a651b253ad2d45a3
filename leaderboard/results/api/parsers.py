"""The only request parser: JSON, bounded in size, strict about numbers and text."""

from __future__ import annotations

import codecs
import json
import math
import re
from collections.abc import Mapping
from typing import IO, Any

from django.conf import settings
from rest_framework import exceptions, parsers

from leaderboard.core.api.errors import RequestTooLarge


class _NonFinite:
    """Stands in for NaN / Infinity while parsing so the error can name the field."""

    def __init__(self, name: str) -> None:
        self.name = name


# Text PostgreSQL cannot store reaches a str only through a \u escape (JSON
# forbids raw control characters, and UTF-8 cannot encode a lone surrogate);
# a body without one (nearly every body) needs no walk over its strings.
_SUSPECT_ESCAPE = re.compile(r"\\u(?:0000|[dD][89a-fA-F])")


def _bad_values(value: Any, path: str, out: dict[str, list[str]]) -> None:
    if isinstance(value, _NonFinite):
        out[path or "body"] = [f"{value.name} is not a number; send null when a figure is missing."]
    elif isinstance(value, float) and not math.isfinite(value):
        # A literal too large for a float (1e999) parses as infinity.
        out[path or "body"] = ["The number is out of range."]
    elif isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            out[path or "body"] = ["The text contains an unpaired UTF-16 surrogate."]
        else:
            if "\x00" in value:
                out[path or "body"] = ["Null characters are not allowed."]
    elif isinstance(value, Mapping):
        for key, item in value.items():
            _bad_values(key, f"{path}.{key}" if path else str(key), out)
            _bad_values(item, f"{path}.{key}" if path else str(key), out)
    elif isinstance(value, list):
        for position, item in enumerate(value):
            _bad_values(item, f"{path}.{position}" if path else str(position), out)


class BoundedJSONParser(parsers.BaseParser):
    """JSON with a size limit (413) and no NaN, Infinity, null characters or
    lone surrogates (400 naming the field): PostgreSQL cannot store the last
    two, and NaN would poison every mean it enters.

    A BaseParser, not DRF's JSONParser: DRF reads a JSONParser's body through
    ``request.body``, held to Django's one DATA_UPLOAD_MAX_MEMORY_SIZE whatever the
    endpoint, while other parsers read the request stream, which this one reads
    no further than its own endpoint's limit (``limit_setting``)."""

    media_type = "application/json"
    limit_setting = "RIGBOARD_MAX_BODY_BYTES"

    def parse(
        self, stream: IO[Any], media_type: str | None = None, parser_context: Mapping[str, Any] | None = None
    ) -> Any:
        limit = getattr(settings, self.limit_setting)
        request = (parser_context or {}).get("request")
        declared = request.META.get("CONTENT_LENGTH") if request is not None else None
        if declared and str(declared).isdigit() and int(declared) > limit:
            raise RequestTooLarge(f"The request body is {declared} bytes; the limit is {limit} bytes.")
        raw = stream.read(limit + 1)
        if len(raw) > limit:
            raise RequestTooLarge(f"The request body is over the limit of {limit} bytes.")
        encoding = (parser_context or {}).get("encoding") or settings.DEFAULT_CHARSET
        non_finite = False

        def parse_constant(name: str) -> _NonFinite:
            nonlocal non_finite
            non_finite = True
            return _NonFinite(name)

        def parse_float(literal: str) -> float:
            nonlocal non_finite
            value = float(literal)
            non_finite = non_finite or not math.isfinite(value)  # 1e999
            return value

        try:
            text = codecs.decode(raw, encoding)
            data = json.loads(text, parse_constant=parse_constant, parse_float=parse_float)
        except (ValueError, RecursionError) as exc:
            # RecursionError: thousands of nested brackets fit in the size limit.
            raise exceptions.ParseError(f"Malformed JSON: {exc}") from exc
        if non_finite or _SUSPECT_ESCAPE.search(text):
            # Walk the document only to name the fields at fault.
            errors: dict[str, list[str]] = {}
            _bad_values(data, "", errors)
            if errors:
                return self.refused(data, errors)
        return data

    def refused(self, data: Any, errors: dict[str, list[str]]) -> Any:
        """Answer a document holding values no field may take (``errors``): a 400 naming them."""
        raise exceptions.ValidationError(errors)

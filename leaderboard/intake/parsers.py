"""The llama-bench import takes the file itself as the request body, any content type."""

from __future__ import annotations

import codecs
from collections.abc import Mapping
from typing import IO, Any

from django.conf import settings
from rest_framework import exceptions, parsers

from leaderboard.core.api.errors import RequestTooLarge


def max_file_bytes() -> int:
    return int(settings.RIGBOARD_LLAMA_BENCH_MAX_BYTES)


class LlamaBenchFileParser(parsers.BaseParser):
    """Return the body as text (UTF-8), bounded in size (413)."""

    media_type = "*/*"

    def parse(
        self, stream: IO[Any], media_type: str | None = None, parser_context: Mapping[str, Any] | None = None
    ) -> Any:
        limit = max_file_bytes()
        request = (parser_context or {}).get("request")
        declared = request.META.get("CONTENT_LENGTH") if request is not None else None
        if declared and str(declared).isdigit() and int(declared) > limit:
            raise RequestTooLarge(f"The file is {declared} bytes; the limit is {limit} bytes.")
        raw = stream.read(limit + 1) if stream is not None else b""
        if len(raw) > limit:
            raise RequestTooLarge(f"The file is over the limit of {limit} bytes.")
        try:
            return codecs.decode(raw, "utf-8")
        except UnicodeDecodeError as exc:
            raise exceptions.ParseError(f"The file is not UTF-8 text: {exc}") from exc

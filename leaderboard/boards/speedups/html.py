"""Django's ``format_html`` and ``format_html_join`` without its lazy-string checks, for
the fenced row cells and selects (issue 40).

Django's ``escape`` is wrapped by ``keep_lazy``, which looks at every argument for a lazy
translation before escaping it: at 50 leaderboard rows of ~30 escaped values and seven
filter menus of up to 200 options, that check was most of the rows' cells' CPU
(cProfile, benchmarks/site_latency.py --profile, 100k runs; the page's own CPU fell by a
quarter with these and the GPU address reversed once a page). These give the same text:
a value with ``__html__`` (a SafeString, a lazy string made safe) as it says, anything
else (a lazy string included) ``str()`` then ``html.escape``, exactly as
``conditional_escape`` does. The plain references are Django's own functions, held equal
in tests/boards/test_cells_speedup.py; the pages' HTML is checked against their templates
there too."""

from __future__ import annotations

import html
from collections.abc import Iterable
from typing import Any

from django.utils.safestring import SafeString


def esc(value: Any) -> str:
    """Return ``conditional_escape(value)``: its own HTML when it has one, else its text escaped."""
    if hasattr(value, "__html__"):
        return value.__html__()
    return html.escape(str(value))


def format_html(format_string: str, /, *args: Any, **kwargs: Any) -> SafeString:
    """Return ``django.utils.html.format_html(format_string, *args, **kwargs)``."""
    return SafeString(format_string.format(*map(esc, args), **{k: esc(v) for k, v in kwargs.items()}))


def format_html_join(sep: str, format_string: str, rows: Iterable[Iterable[Any]]) -> SafeString:
    """Return ``django.utils.html.format_html_join(sep, format_string, rows)`` for rows of positional values."""
    return SafeString(esc(sep).join(format_string.format(*map(esc, row)) for row in rows))

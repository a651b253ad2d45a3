"""The site's template tags and filters: numbers with their units, signed deltas,
links that change one query parameter while keeping the others. The formatting a
leaderboard cell shares with the fenced cells is defined in ../formatting.py and
registered here; the fenced speed-ups (../speedups/) are only registered here."""

from __future__ import annotations

import json
import re
from typing import Any

from django import template
from django.conf import settings
from django.http import QueryDict
from django.urls import reverse
from django.utils.html import format_html

from leaderboard.boards import formatting
from leaderboard.boards.formatting import gpu_url, http_url, markers, source_title
from leaderboard.boards.speedups import cells, select
from leaderboard.core.labels import field_label, signed_pct
from runners.portable import portable_text

register = template.Library()

register.filter("num", formatting.num)
register.filter("as_printed", formatting.as_printed)
register.simple_tag(formatting.printed_figure, name="printed")
register.filter("vram_gib", formatting.vram_gib)
register.filter("http_url", http_url)
register.filter("field_label", field_label)
register.filter("reason_text", formatting.reason_text)
register.filter("flash_attn_shown", formatting.flash_attn_shown)
register.filter("cost_label", formatting.cost_label)
register.filter("contention_note", formatting.contention_note)
# A recorded command line, log or path as another machine reads it: files by name, no loopback port.
register.filter("portable", portable_text)
register.simple_tag(formatting.provenance_badge)
register.simple_tag(formatting.card_not_stated_badge)
register.simple_tag(formatting.cost_cell)
# Fenced speed-ups, each defined beside the name of its plain reference and the figures that keep it.
register.simple_tag(cells.leaderboard_cells, takes_context=True)
register.simple_tag(cells.rows_table_cells, takes_context=True)
register.simple_tag(select.select_field)


@register.filter
def signed(value: Any, digits: int = 1) -> str:
    """Return a signed percentage like ``+1.3%``; an en dash when missing."""
    return "–" if value is None else signed_pct(float(value), int(digits))


@register.filter
def pvalue(value: Any) -> str:
    """Return a p-value as people read them: ``< 0.001`` for tiny ones."""
    if value is None:
        return "–"
    number = float(value)
    return "< 0.001" if number < 0.001 else f"{number:.3f}"


@register.simple_tag
def qs(params: QueryDict, **changes: Any) -> str:
    """Return ``?…`` with ``params`` and ``changes`` applied; a change to None or '' drops the key.
    Changing anything but the page goes back to page 1."""
    merged = params.copy()
    if "page" not in changes:
        merged.pop("page", None)
    for key, value in changes.items():
        if value is None or value == "":
            merged.pop(key, None)
        else:
            merged[key] = str(value)
    encoded = merged.urlencode()
    return f"?{encoded}" if encoded else "?"


@register.simple_tag
def sort_link(params: QueryDict, current: str, key: str) -> str:
    """Return the query string that sorts by ``key``: descending first, flipping when already sorted by it."""
    target = key if current == f"-{key}" else f"-{key}"
    return qs(params, sort=target)


@register.simple_tag
def sort_mark(current: str, key: str) -> str:
    if current == f"-{key}":
        return "▼"
    if current == key:
        return "▲"
    return ""


# A stored document is shown up to this many characters; the whole one is a click away (the API).
PRETTY_JSON_MAX_CHARS = 20_000


@register.filter
def pretty_json(value: Any, limit: int = PRETTY_JSON_MAX_CHARS) -> str:
    """Return ``value`` as indented JSON text (still escaped by the template), cut at
    ``limit`` characters with a last line saying so. The encoder is consumed only up
    to the limit, so a document stored before the ingest bounds (900 nested lists
    around 100k zeros) costs no more than a small one; one nested past Python's
    recursion limit is shown compact."""
    encoder = json.JSONEncoder(indent=2, ensure_ascii=False, sort_keys=True, default=str)
    parts: list[str] = []
    size = 0
    try:
        for chunk in encoder.iterencode(value):
            parts.append(chunk)
            size += len(chunk)
            if size > limit:
                break
    except (RecursionError, ValueError, TypeError):
        parts = (
            [json.dumps(value, default=str)[: limit + 1]] if _compact_ok(value) else ["(not shown: nested too deep)"]
        )
    text = "".join(parts)
    if len(text) > limit:
        return text[:limit] + f"\n… cut at {limit:,} characters: the whole document is in the run's JSON."
    return text


def _compact_ok(value: Any) -> bool:
    try:
        json.dumps(value, default=str)
    except (RecursionError, ValueError, TypeError):
        return False
    return True


# A sentence ends at . ! or ? followed by space and a capital, a quote or a bracket
# (so "e.g. 4K" and "3.5" do not end one).
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'(\[‘“])")


_ONE_REPORT = re.compile(r"This (?:result|run|report)\b")


@register.filter
def distinct_sentences(notes: str | None) -> str:
    """Return ``notes`` with each sentence kept where it first appears. A published rig's
    notes join the distinct notes of every report on it, which repeat one description
    with a sentence changed (the dual-3090 rig: "… This result uses one card"). A
    paragraph (blank-line separated) that loses every sentence is left out; notes
    with no repeated sentence come back unchanged. A sentence about one report
    ("This result uses one card …") is left out too: it describes a run, not the
    rig, and the run's own notes say it."""
    text = notes or ""
    seen: set[str] = set()
    kept: list[str] = []
    changed = False
    for paragraph in re.split(r"\n\s*\n", text):
        sentences = [s for s in _SENTENCE_END.split(paragraph.strip()) if s]
        new = [s for s in sentences if s not in seen and not _ONE_REPORT.match(s)]
        seen.update(sentences)
        if len(new) < len(sentences):
            changed = True
            if new:
                kept.append(" ".join(new))
        else:
            kept.append(paragraph)
    return "\n\n".join(kept) if changed else text


@register.simple_tag
def source_name(source: Any) -> str:
    """Return a source's name linked to its page on this site, and to the article when it has an http(s) URL."""
    if source is None:
        return ""
    name = source_title(source.title, source.author_handle, source.key)
    link = format_html('<a href="{}" class="source-page">{}</a>', reverse("boards:source", args=[source.pk]), name)
    url = http_url(source.url)
    if url:
        link = format_html('{} (<a href="{}" rel="nofollow noopener">article</a>)', link, url)
    return link


# The mail backends that print a mail where the site runs instead of sending it.
_PRINTED_MAIL = ("django.core.mail.backends.console.EmailBackend",)


@register.simple_tag
def mail_printed_here() -> bool:
    """Return whether mails are printed where the site runs (``make demo``'s console backend), not sent."""
    return settings.EMAIL_BACKEND in _PRINTED_MAIL


@register.simple_tag
def gpu_link(model: str) -> str:
    return format_html('<a href="{}" class="gpu-link">{}</a>', gpu_url(model), model)


@register.simple_tag
def row_markers(row: Any) -> str:
    return markers(row)

"""Formatting for the pages: numbers with their units, signed deltas, and
links that change one query parameter while keeping the others."""

from __future__ import annotations

import json
from typing import Any

from django import template
from django.http import QueryDict
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe

from leaderboard.boards.filters import COLUMN_ORDER

register = template.Library()


@register.filter
def num(value: Any, digits: int = 1) -> str:
    """Return ``value`` with thousands separators and ``digits`` decimals; an en dash when missing."""
    if value is None or value == "":
        return "–"
    try:
        number = float(value)
    except (TypeError, ValueError):
        return str(value)
    return f"{number:,.{int(digits)}f}"


@register.filter
def signed(value: Any, digits: int = 1) -> str:
    """Return a signed percentage like ``+1.3%``; an en dash when missing."""
    if value is None:
        return "–"
    return f"{float(value):+,.{int(digits)}f}%"


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


@register.filter
def http_url(value: Any) -> str:
    """Return ``value`` when it is an http(s) URL, else '' (a stored ``javascript:`` link must never render)."""
    text = str(value or "").strip()
    return text if text.lower().startswith(("http://", "https://")) else ""


@register.filter
def pretty_json(value: Any) -> str:
    """Return ``value`` as indented JSON text (still escaped by the template)."""
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True, default=str)


@register.simple_tag
def select_field(bound_field: Any) -> str:
    """Return a filter ``<select>`` built in Python: Django's widget templates
    render each <option> through the template engine, which costs more than the
    whole results table once a select lists hundreds of rigs."""
    current = bound_field.value()
    current = "" if current is None else str(current)
    options = format_html_join(
        "",
        '<option value="{}"{}>{}</option>',
        ((value, " selected" if str(value) == current else "", label) for value, label in bound_field.field.choices),
    )
    return format_html('<select name="{}" id="{}">{}</select>', bound_field.html_name, bound_field.auto_id, options)


# Constant markup, nothing to escape (format_html with no arguments is deprecated).
_MEASURED_BADGE = mark_safe('<span class="badge measured" title="Measured by a Rigboard runner">measured</span>')
_REPORTED_BADGE = mark_safe('<span class="badge reported" title="Figures as published by the source">reported</span>')


@register.simple_tag
def provenance_badge(row: Any) -> str:
    """Return the measured / reported badge, a reported row's with a link to its source (http(s) only)."""
    if row.provenance != "reported":
        return _MEASURED_BADGE
    badge = _REPORTED_BADGE
    url = http_url(row.source_url)
    if url:
        return format_html(
            '{} <a href="{}" rel="nofollow noopener" class="source-link" title="{}">source</a>',
            badge,
            url,
            row.source_title,
        )
    if row.source_title:
        title = row.source_title if len(row.source_title) <= 32 else row.source_title[:31] + "…"
        return format_html('{} <span class="source-title" title="{}">{}</span>', badge, row.source_title, title)
    return badge


_PLACEHOLDER_PK = 987654321


def _object_url(context: template.Context, name: str, pk: int) -> str:
    # reverse() costs more than rendering a whole row; reverse once per page
    # with a placeholder id and substitute (the script prefix stays honoured).
    render_context: Any = context.render_context
    cache: dict[str, str] = render_context.setdefault("boards_url_patterns", {})
    if name not in cache:
        cache[name] = reverse(name, args=[_PLACEHOLDER_PK])
    return cache[name].replace(str(_PLACEHOLDER_PK), str(int(pk)))


@register.simple_tag(takes_context=True)
def leaderboard_cells(context: template.Context, row: Any, rank: int) -> str:
    """Return one leaderboard row's cells, in COLUMN_ORDER (filters.py), built in
    Python with format_html (every value escaped): the template engine spends
    ~1 ms per row on these 19 cells, a quarter of the page's time budget at 50 rows."""
    run_url = _object_url(context, "boards:run", row.run_id)
    rig_url = _object_url(context, "boards:rig", row.rig_id)
    if row.decode_tokens_per_s_min is not None:
        spread = f"{num(row.decode_tokens_per_s_min, 1)}–{num(row.decode_tokens_per_s_max, 1)}"
    else:
        spread = "–"
    model_class = format_html('<br><span class="muted">{}</span>', row.model_class) if row.model_class else ""
    weight = format_html(' <span class="muted">{}</span>', row.weight_format) if row.weight_format else ""
    # Runs a nightly build made link to their build-by-build timeline.
    timeline = (context.get("timeline_links") or {}).get(row.run_id)
    nightly = (
        format_html(
            ' <a class="nightly-link" href="{}" title="Nightly timeline of this configuration">nightly</a>',
            timeline.url,
        )
        if timeline
        else ""
    )
    cells = {
        "rig": format_html('<td class="name"><a href="{}">{}</a></td>', rig_url, row.rig),
        "model": format_html('<td class="name wide"><a href="{}">{}</a>{}</td>', run_url, row.model, model_class),
        "decode": format_html('<td class="num strong">{}</td>', num(row.decode_tokens_per_s_mean, 2)),
        "n": format_html('<td class="num">{}</td>', row.n or "–"),
        "stdev": format_html('<td class="num">{}</td>', num(row.decode_tokens_per_s_stdev, 2)),
        "range": format_html('<td class="num">{}</td>', spread),
        "gpu": format_html('<td class="name">{}</td>', row.gpus),
        "engine": format_html(
            '<td class="name">{} <span class="muted">{}</span>{}</td>', row.engine, row.build, nightly
        ),
        "quant": format_html("<td>{}{}</td>", row.quantization, weight),
        "spec": format_html("<td>{}</td>", row.speculative_type),
        "accept": format_html('<td class="num">{}</td>', num(row.acceptance_pct)),
        "ctx": format_html('<td class="num">{}</td>', num(row.ctx_size, 0)),
        "power": format_html('<td class="num">{}</td>', num(row.power_w_mean, 0)),
        "tpkwh": format_html('<td class="num">{}</td>', num(row.tokens_per_kwh, 0)),
        "cost": format_html('<td class="num">{}</td>', num(row.electricity_usd_per_mtok, 2)),
        "provenance": format_html("<td>{}</td>", provenance_badge(row)),
        "date": format_html('<td class="date">{}</td>', row.date.strftime("%Y-%m-%d")),
    }
    head = format_html(
        '<td class="pick"><input type="checkbox" name="runs" value="{run_id}" aria-label="compare run {run_id}"></td>'
        '<td class="rank"><a href="{run_url}">{rank}</a></td>',
        run_id=row.run_id,
        run_url=run_url,
        rank=rank,
    )
    return mark_safe(head + "".join(cells[key] for key in COLUMN_ORDER))  # noqa: S308 - every part is format_html's

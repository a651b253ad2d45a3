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


def source_title(title: str, author_handle: str = "", key: str = "") -> str:
    """Return what to call a source: its title, else "an article by <author>", else its file key."""
    if title:
        return title
    if author_handle:
        return f"An article by {author_handle}"
    return f"Article {key}" if key else "An unnamed article"


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


@register.simple_tag
def provenance_badge(row: Any) -> str:
    """Return the measured / reported badge, a reported row's with a link to its source's page."""
    if row.provenance != "reported":
        return mark_safe('<span class="badge measured" title="Measured by a Rigboard runner">measured</span>')
    badge = mark_safe('<span class="badge reported" title="Figures as published by the source">reported</span>')
    source_id = getattr(row, "source_id", None)
    title = source_title(row.source_title, getattr(row, "source_author", ""), getattr(row, "source_key", ""))
    out = badge
    if source_id:
        short = title if len(title) <= 32 else title[:31] + "…"
        out = format_html(
            '{} <a href="{}" class="source-link" title="{}">{}</a>',
            out,
            reverse("boards:source", args=[source_id]),
            title,
            short,
        )
    url = http_url(row.source_url)
    if url:
        out = format_html(
            '{} <a href="{}" rel="nofollow noopener" class="article-link" title="the article">↗</a>', out, url
        )
    return out


_PLACEHOLDER_PK = 987654321


def _object_url(context: template.Context, name: str, pk: int) -> str:
    # reverse() costs more than rendering a whole row; reverse once per page
    # with a placeholder id and substitute (the script prefix stays honoured).
    render_context: Any = context.render_context
    cache: dict[str, str] = render_context.setdefault("boards_url_patterns", {})
    if name not in cache:
        cache[name] = reverse(name, args=[_PLACEHOLDER_PK])
    return cache[name].replace(str(_PLACEHOLDER_PK), str(int(pk)))


CARD_NOT_STATED = (
    "This rig mixes GPU models and the run does not say which card ran it: "
    "it is ranked on neither GPU's page, only on the rig's and the leaderboard."
)


def _gpu_links(context: template.Context, row: Any) -> str:
    # Each GPU model links to its page; the rig's summary ("6× RTX 3090") stays the text shown.
    if not row.gpu_models:
        return format_html("{}", row.gpus)
    links = format_html_join(" + ", '<a href="{}" class="gpu-link">{}</a>', ((gpu_url(m), m) for m in row.gpu_models))
    badge = format_html(" {}", card_not_stated_badge()) if row.card_not_stated else ""
    return format_html('<span title="{}">{}</span>{}', row.gpus, links, badge)


@register.simple_tag
def card_not_stated_badge() -> str:
    """Return the badge of a run on a rig that mixes GPU models (``LeaderboardRow.card_not_stated``)."""
    return format_html('<span class="badge card-not-stated" title="{}">card not stated</span>', CARD_NOT_STATED)


def gpu_url(model: str) -> str:
    """Return the page of one GPU model (its name is the URL's last part)."""
    return reverse("boards:gpu", args=[model])


@register.simple_tag
def gpu_link(model: str) -> str:
    return format_html('<a href="{}" class="gpu-link">{}</a>', gpu_url(model), model)


def markers(row: Any) -> str:
    """Return the badges that qualify a row's headline figure: a sweep's
    shortest-context figure, failed output checks."""
    parts = []
    if getattr(row, "is_sweep", False):
        parts.append(
            ' <span class="badge sweep" title="A context sweep: ranked by its shortest context\'s figures">sweep</span>'
        )
    if getattr(row, "failed_checks", 0):
        parts.append(
            format_html(
                ' <span class="badge failed" title="{} repetition(s) failed the output check">checks failed</span>',
                row.failed_checks,
            )
        )
    return mark_safe("".join(parts))  # noqa: S308 - each part was built by format_html


@register.simple_tag
def row_markers(row: Any) -> str:
    return markers(row)


@register.simple_tag
def cost_cell(row: Any) -> str:
    """Return the $/MTok a row has: electricity at the page's price, else the API price its article printed."""
    if row.electricity_usd_per_mtok is not None:
        return num(row.electricity_usd_per_mtok, 2)
    if getattr(row, "cost_usd_per_mtok", None) is not None:
        return format_html(
            '{} <span class="muted" title="API price as published, not electricity">API</span>',
            as_printed(row.cost_usd_per_mtok),
        )
    return "–"


@register.filter
def as_printed(value: Any) -> str:
    """Return a published figure with the digits it was printed with (182.14 stays 182.14); '–' when missing."""
    if value is None or value == "":
        return "–"
    number = float(value)
    if number == int(number) and abs(number) < 1e15:
        return f"{int(number):,}"
    return f"{number:,.10f}".rstrip("0")


@register.filter
def vram_gib(mib: Any) -> str:
    if mib is None:
        return "–"
    return f"{float(mib) / 1024:,.1f}"


@register.simple_tag(takes_context=True)
def leaderboard_cells(context: template.Context, row: Any, rank: int) -> str:
    """Return one leaderboard row's cells, in views.COLUMNS' order (the one column order), built in
    Python with format_html (every value escaped): the template engine spends
    ~1 ms per row on these cells, a quarter of the page's time budget at 50 rows.
    Cells marked ``opt`` are hidden on a phone unless every column is asked for."""
    run_url = _object_url(context, "boards:run", row.run_id)
    rig_url = _object_url(context, "boards:rig", row.rig_id)
    model_url = _object_url(context, "boards:model", row.model_file_id) if row.model_file_id else run_url
    if row.decode_tokens_per_s_min is not None:
        spread = f"range {num(row.decode_tokens_per_s_min, 1)}–{num(row.decode_tokens_per_s_max, 1)}"
    else:
        spread = ""
    stats = []
    if row.decode_tokens_per_s_stdev is not None:
        stats.append(f"σ {num(row.decode_tokens_per_s_stdev, 2)}")
    if row.n:
        stats.append(f"n {row.n}")
    elif getattr(row, "is_sweep", False):
        stats.append("at its shortest context")
    elif row.provenance == "reported":
        stats.append("published figure")
    if spread:
        stats.append(spread)
    model_class = format_html('<br><span class="muted">{}</span>', row.model_class) if row.model_class else ""
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
    spec = row.speculative_shown
    accept = format_html(" · accept {}\u00a0%", num(row.acceptance_pct)) if row.acceptance_pct is not None else ""
    return format_html(
        '<td class="pick"><input type="checkbox" name="runs" value="{run_id}" aria-label="compare run {run_id}"></td>'
        '<td class="rank" title="rank on this page\'s ordering">{rank}</td>'
        '<td class="name wide col-model"><a href="{model_url}" class="model-link" title="Every run of this model file">'
        "{model}</a> {quant}{model_class}"
        '<span class="phone-only muted"><br>{engine} · {rig}</span></td>'
        '<td class="num col-decode">'
        '<a href="{run_url}" class="strong decode run-link" title="Run #{run_id}">{decode}</a>'
        '{markers}<br><span class="muted stats">{stats}</span></td>'
        '<td class="name opt col-stack">{engine} <span class="muted">{build}</span>{nightly}'
        '<br><span class="muted">{spec}{accept}</span></td>'
        '<td class="name opt col-rig"><a href="{rig_url}">{rig}</a><br><span class="muted">{gpus}</span></td>'
        '<td class="num opt col-ctx">{ctx}</td><td class="num opt col-power">{power}</td>'
        '<td class="num opt col-tpkwh">{tpkwh}</td><td class="num opt col-cost">{cost}</td>'
        '<td class="num opt col-vram">{vram}</td>'
        '<td class="opt col-source">{badge}<br><span class="date muted">{date}</span></td>',
        run_id=row.run_id,
        run_url=run_url,
        model_url=model_url,
        rank=rank,
        rig_url=rig_url,
        rig=row.rig,
        model=row.model,
        quant=row.quantization,
        model_class=model_class,
        decode=num(row.decode_tokens_per_s_mean, 2),
        markers=markers(row),
        stats=" · ".join(stats),
        gpus=_gpu_links(context, row),
        engine=row.engine,
        build=row.build,
        nightly=nightly,
        spec=spec,
        accept=accept,
        ctx=num(row.ctx_size, 0),
        power=num(row.power_w_mean, 0),
        tpkwh=num(row.tokens_per_kwh, 0),
        cost=cost_cell(row),
        vram=vram_gib(row.vram_peak_mib),
        badge=provenance_badge(row),
        date=row.date_label,
    )

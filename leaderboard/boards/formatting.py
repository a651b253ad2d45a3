"""What the pages print in a table cell: numbers with their units, badges and links,
as plain functions. Templates reach them through the tags and filters of
templatetags/boards.py; the fenced leaderboard cells (speedups/cells.py) call them
directly, so both paths format a value the one way."""

from __future__ import annotations

import re
from typing import Any

from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import mark_safe

from leaderboard.results.models import Engine
from runners.ab_design import HEAVY_CPU_SHARE, HEAVY_GPU_UTIL_PCT


def num(value: Any, digits: int = 1) -> str:
    """Return ``value`` with thousands separators and ``digits`` decimals; an en dash when missing."""
    if value is None or value == "":
        return "–"
    try:
        number = float(value)
    except (TypeError, ValueError):
        return str(value)
    return f"{number:,.{int(digits)}f}"


def as_printed(value: Any) -> str:
    """Return a published figure with the digits it was printed with (182.14 stays 182.14); '–' when missing."""
    if value is None or value == "":
        return "–"
    number = float(value)
    if number == int(number) and abs(number) < 1e15:
        return f"{int(number):,}"
    return f"{number:,.10f}".rstrip("0")


def printed_figure(obj: Any, name: str) -> str:
    """Return ``obj``'s figure ``name`` with the digits the article printed it with
    (``obj.printed``, by field: 249.30 stays 249.30, thousands separated), else as
    ``as_printed`` gives it; '–' when missing. A printed text that no longer matches
    the stored value is not trusted."""
    value = getattr(obj, name, None)
    text = (getattr(obj, "printed", None) or {}).get(name)
    if value is None or not isinstance(text, str) or not _PRINTED.fullmatch(text) or float(text) != float(value):
        return as_printed(value)
    whole, dot, fraction = text.partition(".")
    sign = "-" if whole.startswith("-") else ""
    return f"{sign}{int(whole.lstrip('-')):,}{dot}{fraction}"


_PRINTED = re.compile(r"-?\d+(\.\d+)?")


def vram_gib(mib: Any) -> str:
    if mib is None:
        return "–"
    return f"{float(mib) / 1024:,.1f}"


def http_url(value: Any) -> str:
    """Return ``value`` when it is an http(s) URL, else '' (a stored ``javascript:`` link must never render)."""
    text = str(value or "").strip()
    return text if text.lower().startswith(("http://", "https://")) else ""


def source_title(title: str, author_handle: str = "", key: str = "") -> str:
    """Return what to call a source: its title, else "an article by <author>", else its file key."""
    if title:
        return title
    if author_handle:
        return f"An article by {author_handle}"
    return f"Article {key}" if key else "An unnamed article"


def provenance_badge(row: Any) -> str:
    """Return the measured / reported badge, a reported row's with a link to its source's page."""
    if row.provenance != "reported" and getattr(row, "summary_source", "") == "printed":
        # A pasted llama-bench Markdown table: llama-bench measured it, not a Rigboard runner.
        return mark_safe(
            '<span class="badge printed" title="Mean ± SD as llama-bench printed it in a Markdown table; '
            'no samples; not measured by a Rigboard runner">llama-bench summary</span>'
        )
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


CARD_NOT_STATED = (
    "This rig mixes GPU models and the run does not say which card ran it: "
    "it is ranked on neither GPU's page, only on the rig's and the leaderboard."
)


def card_not_stated_badge() -> str:
    """Return the badge of a run on a rig that mixes GPU models (``LeaderboardRow.card_not_stated``)."""
    return format_html('<span class="badge card-not-stated" title="{}">card not stated</span>', CARD_NOT_STATED)


def gpu_url(model: str) -> str:
    """Return the page of one GPU model (its name is the URL's last part)."""
    return reverse("boards:gpu", args=[model])


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


def published_cost_is_api_price(engine: str) -> bool:
    """Return True when a published $/MTok is an API's price (a hosted model: the
    Cloud API engine), False when it is a local rig's electricity (seed 002's
    "Electricity only (~$0.02/MTok)")."""
    return engine in (Engine.CLOUD_API.value, Engine.CLOUD_API.label)


def cost_label(engine: str) -> str:
    """Return what a published $/MTok is: "API price" or "electricity" (see published_cost_is_api_price)."""
    return "API price" if published_cost_is_api_price(engine) else "electricity"


def cost_cell(row: Any) -> str:
    """Return the $/MTok a row has: electricity at the page's price, else the figure its
    article printed, labelled with what it is (an API price or the article's electricity cost)."""
    if row.electricity_usd_per_mtok is not None:
        return num(row.electricity_usd_per_mtok, 2)
    if getattr(row, "cost_usd_per_mtok", None) is not None:
        if published_cost_is_api_price(row.engine):
            title, label = "API price as published, not electricity", "API"
        else:
            title, label = "electricity cost as the article published it", "electricity"
        return format_html(
            '{} <span class="muted" title="{}">{}</span>', as_printed(row.cost_usd_per_mtok), title, label
        )
    return "–"


_TOO_FEW = re.compile(r"needs at least (?P<least>\d+) values, got (?P<got>\d+)")


def reason_text(reason: str) -> str:
    """Return why a figure is missing in a few words: a percentile of no values is
    "not recorded", of too few "only 1 value"."""
    match = _TOO_FEW.search(reason or "")
    if match is None:
        return reason
    got = int(match["got"])
    return "not recorded" if got == 0 else f"only {got} value{'s' if got != 1 else ''}"


_FLASH_ATTN_FLAG = re.compile(r"(?:^|\s)(?:--flash-attn|-fa)(?:[ =](?P<value>on|off|auto|true|false|1|0)\b)?")


def flash_attn_shown(configuration: Any) -> str:
    """Return the configuration's flash attention setting; when it was not stored,
    what its command line says (llama-server's ``--flash-attn on``, or a bare
    ``--flash-attn`` of older builds, is on); an en dash when neither says."""
    if configuration.flash_attn:
        return str(configuration.flash_attn)
    match = _FLASH_ATTN_FLAG.search(configuration.command_line or "")
    if match is None:
        return "–"
    value = (match["value"] or "on").lower()
    return {"true": "on", "1": "on", "false": "off", "0": "off"}.get(value, value)


def contention_note(extra: Any) -> str:
    """Return what else used the rig while a run's repetitions ran, in words (the
    runner's ``extra["contention"]``, runners/harness/contention.py), '' where the run
    says nothing of it; a machine busier than the A/B rule judges is called busy."""
    found = extra.get("contention") if isinstance(extra, dict) else None
    if not isinstance(found, dict):
        return ""
    if found.get("reason"):
        return f"Other processes' use of the rig was not measured: {found['reason']}."
    share = found.get("others_cpu_share")
    if share is None:
        return "Other processes' use of the CPUs was not measured (no /proc on this rig)."
    words = (
        f"While the repetitions ran, other processes used {100 * share:.0f}% of the machine's CPUs "
        f"({num(found.get('others_cpu_s'))} CPU-seconds in {num(found.get('wall_s'))} s)"
    )
    util, mem = found.get("gpu_others_util_pct"), found.get("gpu_others_mem_mib")
    if util is not None:
        words += f"; on the GPU, other processes peaked at {util:.0f}% SM use and held {num(mem, 0)} MiB"
    busy = share > HEAVY_CPU_SHARE or (util is not None and util > HEAVY_GPU_UTIL_PCT)
    return words + (": a busy machine, so this run may be slower than the rig alone." if busy else ".")

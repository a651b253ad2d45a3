"""The leaderboard's row cells built in Python with format_html (every value
escaped) instead of through the template engine.

Plain reference: templates/boards/_leaderboard_cells.html, the same cells with
the same tags and filters and ``{% url %}``; tests/boards/test_cells_speedup.py
renders a varied set of rows both ways and checks the HTML is the same.

Measured 2026-11-23 (2-core VM, load average 2–4, 10k generated runs;
benchmarks/site_speedups.py, figures in benchmarks/README.md): 50 rows' cells
cost 5.2 ms of CPU here against 14.5 ms through the template; the leaderboard
page's CPU p50 is 23.1 ms with these cells and 32.6 ms with the template (41%
more; the GPU page 23.7 against 34.4 ms). Kept: it saves over a fifth of the
page (issue #10 item 2)."""

from __future__ import annotations

from typing import Any

from django import template
from django.urls import reverse

from leaderboard.boards.bound_text import gauge_cell
from leaderboard.boards.formatting import (
    card_not_stated_badge,
    cost_cell,
    gpu_url,
    markers,
    num,
    provenance_badge,
    vram_gib,
)
from leaderboard.boards.speedups.html import format_html, format_html_join

_PLACEHOLDER_PK = 987654321


def _object_url(context: template.Context, name: str, pk: int) -> str:
    # reverse() costs more than rendering a whole row; reverse once per page
    # with a placeholder id and substitute (the script prefix stays honoured).
    render_context: Any = context.render_context
    cache: dict[str, str] = render_context.setdefault("boards_url_patterns", {})
    if name not in cache:
        cache[name] = reverse(name, args=[_PLACEHOLDER_PK])
    return cache[name].replace(str(_PLACEHOLDER_PK), str(int(pk)))


def _gpu_url(context: template.Context, model: str) -> str:
    # A GPU page's address, reversed once per model a page (50 rows name a dozen GPUs).
    render_context: Any = context.render_context
    cache: dict[str, str] = render_context.setdefault("boards_gpu_urls", {})
    if model not in cache:
        cache[model] = gpu_url(model)
    return cache[model]


def _gpu_links(context: template.Context, row: Any) -> str:
    # Each GPU model links to its page; the rig's summary ("6× RTX 3090") stays the text shown.
    if not row.gpu_models:
        return format_html("{}", row.gpus)
    links = format_html_join(
        " + ", '<a href="{}" class="gpu-link">{}</a>', ((_gpu_url(context, m), m) for m in row.gpu_models)
    )
    badge = format_html(" {}", card_not_stated_badge()) if row.card_not_stated else ""
    return format_html('<span title="{}">{}</span>{}', row.gpus, links, badge)


def _model_class(row: Any) -> str:
    # The model's class under its name ("35B MoE-A3B + MTP"), in both row kinds.
    return format_html('<br><span class="muted">{}</span>', row.model_class) if row.model_class else ""


def leaderboard_cells(context: template.Context, row: Any, rank: int) -> str:
    """Return one leaderboard row's cells, in views.COLUMNS' order (the one column order).
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
        '<td class="num opt col-bound">{bound}</td>'
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
        model_class=_model_class(row),
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
        bound=gauge_cell((context.get("bounds") or {}).get(row.run_id)),
    )


def rows_table_cells(context: template.Context, row: Any) -> str:
    """Return one row's cells of the plain run table (a rig page's best runs and its
    history, a source's runs). Plain reference: templates/boards/_rows_table_cells.html.
    A rig page renders 100 such rows: through the template they were half its CPU
    (issue 40)."""
    return format_html(
        '<td>{engine} <span class="muted">{build}</span></td>'
        '<td><a href="{run_url}">{model} {quant}</a>{model_class}</td>'
        "<td>{spec}</td>"
        '<td class="num"><span class="strong">{decode}</span>{markers}</td>'
        '<td class="num">{stdev}</td><td class="num">{n}</td><td class="num">{accept}</td>'
        '<td class="num">{ctx}</td><td class="num">{power}</td><td class="num">{cost}</td>'
        '<td>{badge}</td><td class="date">{date}</td>',
        engine=row.engine,
        build=row.build,
        run_url=_object_url(context, "boards:run", row.run_id),
        model=row.model,
        quant=row.quantization,
        model_class=_model_class(row),
        spec=row.speculative_shown,
        decode=num(row.decode_tokens_per_s_mean, 2),
        markers=markers(row),
        stdev=num(row.decode_tokens_per_s_stdev, 2),
        n=row.n or "–",
        accept=num(row.acceptance_pct),
        ctx=num(row.ctx_size, 0),
        power=num(row.power_w_mean, 0),
        cost=cost_cell(row),
        badge=provenance_badge(row),
        date=row.date_label,
    )

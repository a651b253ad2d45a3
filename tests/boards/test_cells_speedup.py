"""The fenced speed-ups of the leaderboard page (leaderboard/boards/speedups/)
render what their plain references render: the cells built in Python against the
template boards/_leaderboard_cells.html for a varied set of rows, the filter
``<select>`` built in Python against Django's widget, up to insignificant whitespace,
and the filter form's ``<input>`` tags against Django's own renderer, exactly."""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
from typing import Any
from urllib.parse import quote

import pytest
from django.forms import Select
from django.forms.renderers import DjangoTemplates
from django.http import QueryDict
from django.template import Context, Template
from django.utils import html as django_html
from django.utils.html import conditional_escape
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext_lazy

from leaderboard.boards.filters import FilterOptions, LeaderboardFilterForm
from leaderboard.boards.rows import LeaderboardRow
from leaderboard.boards.speedups import html as fast_html
from leaderboard.boards.speedups.inputs import INPUT_RENDERER, input_tag
from leaderboard.regressions.selectors import TimelineLink

EVIL = "<script>alert(1)</script>"

MEASURED = LeaderboardRow(
    run_id=12,
    rig_id=3,
    rig="olares-one",
    gpus="1× RTX 5090M Laptop",
    engine="llama.cpp",
    build="master-ad27757",
    model="Qwen3.6-35B-A3B-MTP",
    model_class="35B MoE-A3B + MTP",
    quantization="UD-Q3_K_XL",
    weight_format="GGUF",
    speculative_type="MTP",
    acceptance_pct=86.94,
    ctx_size=32768,
    workload="space-invaders-html v1",
    n=10,
    decode_tokens_per_s_mean=249.303,
    decode_tokens_per_s_stdev=2.912,
    decode_tokens_per_s_min=243.58,
    decode_tokens_per_s_max=253.73,
    decode_tokens_per_s_range=10.15,
    power_w_mean=150.0,
    tokens_per_kwh=2_400_000.0,
    electricity_usd_per_mtok=0.0625,
    provenance="measured",
    source_title="",
    source_url="",
    date=dt.datetime(2026, 11, 20, 8, 30, tzinfo=dt.UTC),
    summary_source="samples",
    vram_peak_mib=23_552.0,
    model_file_id=7,
    gpu_models=("RTX 5090M Laptop",),
)


# The figures a run may lack, all missing.
MISSING = {
    "acceptance_pct": None,
    "ctx_size": None,
    "n": 0,
    "decode_tokens_per_s_stdev": None,
    "decode_tokens_per_s_min": None,
    "decode_tokens_per_s_max": None,
    "power_w_mean": None,
    "tokens_per_kwh": None,
    "electricity_usd_per_mtok": None,
    "vram_peak_mib": None,
    "model_file_id": None,
}


def _rows() -> list[LeaderboardRow]:
    replace = dataclasses.replace
    return [
        MEASURED,
        # A reported run with its source, the API price its article printed, a month-only date.
        replace(
            MEASURED,
            **MISSING,
            run_id=13,
            rig="cloud",
            gpus="1× RTX 5090",
            engine="cloud-api",
            build="",
            model="Claude Haiku (API)",
            model_class="",
            quantization="",
            speculative_type="Unknown",
            cost_usd_per_mtok=4.0,
            provenance="reported",
            summary_source="published",
            source_id=5,
            source_title="267 tok/s local inference on RTX 5090 with a title longer than the badge shows",
            source_url="https://example.org/267-tok-s",
            published_date="2026-05",
            gpu_models=("RTX 5090",),
        ),
        # A reported run whose source has no title, no URL and no date.
        replace(
            MEASURED,
            run_id=14,
            n=0,
            provenance="reported",
            summary_source="published",
            source_id=6,
            source_author="someone",
            source_title="",
            decode_tokens_per_s_stdev=None,
            cost_usd_per_mtok=182.14,
            electricity_usd_per_mtok=None,
        ),
        # A sweep-only run ranked by its shortest context, with failed output checks.
        replace(
            MEASURED,
            run_id=15,
            n=0,
            summary_source="sweep",
            failed_checks=3,
            decode_tokens_per_s_stdev=None,
            decode_tokens_per_s_min=None,
            decode_tokens_per_s_max=None,
            speculative_type="None",
        ),
        # A rig mixing GPU models (card not stated) and a nightly build's run.
        replace(
            MEASURED,
            run_id=16,
            rig="AMD 9900X + 192GB DDR5 + two 3090s",
            gpus="1× RTX 3090 Ti + 1× RTX 3090",
            gpu_models=("RTX 3090 Ti", "RTX 3090"),
            failed_checks=1,
        ),
        # Every value missing that can be, and no GPU models.
        replace(
            MEASURED,
            **MISSING,
            run_id=17,
            gpus="",
            gpu_models=(),
            model_class="",
            speculative_type="",
            decode_tokens_per_s_mean=None,
        ),
        # HTML-hostile strings everywhere a user string goes.
        replace(
            MEASURED,
            run_id=18,
            rig=f'{EVIL} "quoted" & co',
            gpus=f"1× {EVIL}",
            gpu_models=(f"{EVIL} A", "B & 'C'"),
            engine=EVIL,
            build=f"<b>{EVIL}</b>",
            model=f"{EVIL}-model",
            model_class=EVIL,
            quantization=f"Q4 & {EVIL}",
            speculative_type=EVIL,
            provenance="reported",
            source_id=9,
            source_title=EVIL,
            source_url="javascript:alert(1)",
            published_date=EVIL,
            n=2,
        ),
    ]


TIMELINES = {16: TimelineLink(subscription_id=4, reference_id=8, label="nightly")}

FAST = Template(
    "{% load boards %}{% for row in rows %}<tr>{% leaderboard_cells row forloop.counter %}</tr>{% endfor %}"
)
PLAIN = Template(
    '{% for row in rows %}<tr>{% include "boards/_leaderboard_cells.html" with rank=forloop.counter %}</tr>{% endfor %}'
)


def _normalized(html: str) -> str:
    # Whitespace between two cells and runs of whitespace are not rendered; a single space is kept.
    html = re.sub(r"\s+", " ", html)
    return re.sub(r"> <(/?t[dr])", r"><\1", html).replace("<tr> ", "<tr>").strip()


def _both(rows: list[LeaderboardRow], timeline_links: dict[int, TimelineLink]) -> tuple[str, str]:
    context = {"rows": rows, "timeline_links": timeline_links}
    return FAST.render(Context(context)), PLAIN.render(Context(context))


def test_the_python_cells_render_what_the_plain_template_renders() -> None:
    fast, plain = _both(_rows(), TIMELINES)

    assert _normalized(fast) == _normalized(plain)
    # The rows exercise what they say they do.
    assert fast.count("<tr>") == len(_rows())
    for expected in ("nightly-link", "card-not-stated", "badge sweep", "checks failed", "source-link", "API</span>"):
        assert expected in fast, expected
    assert EVIL not in fast and "&lt;script&gt;" in fast
    assert "javascript:" not in fast


def test_the_comparison_tells_a_cell_apart() -> None:
    # The normalization must not hide a difference a visitor would see: rows that
    # differ in one value render differently, in both paths.
    fast, plain = _both(_rows(), TIMELINES)
    fast_without_link, plain_without_link = _both(_rows(), {})
    one_off = [dataclasses.replace(_rows()[0], quantization=""), *_rows()[1:]]

    assert _normalized(fast) != _normalized(fast_without_link)
    assert _normalized(plain) != _normalized(plain_without_link)
    assert _normalized(_both(one_off, TIMELINES)[0]) != _normalized(fast)
    assert _normalized(_both(one_off, TIMELINES)[1]) != _normalized(plain)


ROWS_FAST = Template("{% load boards %}{% for row in rows %}<tr>{% rows_table_cells row %}</tr>{% endfor %}")
ROWS_PLAIN = Template('{% for row in rows %}<tr>{% include "boards/_rows_table_cells.html" %}</tr>{% endfor %}')


def test_the_python_run_table_cells_render_what_the_plain_template_renders() -> None:
    # The plain run table of a rig page and a source page (_rows_table.html), on the same varied rows.
    rows = _rows()
    one_off = [dataclasses.replace(rows[0], build="b9999"), *rows[1:]]
    fast, plain = (t.render(Context({"rows": rows})) for t in (ROWS_FAST, ROWS_PLAIN))

    assert _normalized(fast) == _normalized(plain)
    assert fast.count("<tr>") == len(rows) and fast.count("<td") == 12 * len(rows)
    for expected in ("badge sweep", "checks failed", "source-link", "API</span>", 'href="/runs/12/"'):
        assert expected in fast, expected
    assert EVIL not in fast and "&lt;script&gt;" in fast
    assert "javascript:" not in fast
    # The comparison tells one changed value apart, in both paths.
    assert _normalized(ROWS_FAST.render(Context({"rows": one_off}))) != _normalized(fast)
    assert _normalized(ROWS_PLAIN.render(Context({"rows": one_off}))) != _normalized(plain)


OPTIONS = FilterOptions(
    gpus=["RTX 3090", "RTX 3090 Ti", f"{EVIL} GPU"],
    rigs=[f'{EVIL} "rig" & co', "olares-one", "six RTX 3090s"],
    quantizations=["Q4_K_M", "UD-Q3_K_XL"],
    workloads=[(1, "space-invaders-html v1"), (2, "reported v1")],
)

SELECT_FAST = Template(
    "{% load boards %}{% for field in form %}{% if field.field.choices %}{% select_field field %}{% endif %}"
    "{% endfor %}"
)
SELECT_PLAIN = Template("{% for field in form %}{% if field.field.choices %}{{ field }}{% endif %}{% endfor %}")


def _selects(query: str) -> tuple[str, str]:
    form = LeaderboardFilterForm(QueryDict(query), options=OPTIONS)
    form.is_valid()
    fast, plain = (t.render(Context({"form": form})) for t in (SELECT_FAST, SELECT_PLAIN))
    # Django's widget puts each <option> on its own line.
    return re.sub(r">\s+<", "><", fast).strip(), re.sub(r">\s+<", "><", plain).strip()


@pytest.mark.parametrize(
    "query",
    [
        "",
        "gpu=RTX+3090&engine=vllm&spec=mtp&quant=Q4_K_M&workload=2&provenance=reported",
        "rig=%3Cscript%3Ealert(1)%3C%2Fscript%3E+%22rig%22+%26+co&gpu=%3Cscript%3Ealert(1)%3C%2Fscript%3E+GPU",
    ],
)
def test_the_python_select_renders_what_django_s_widget_renders(query: str) -> None:
    fast, plain = _selects(query)

    assert fast == plain
    assert fast.count("<select") == 7
    assert EVIL not in fast
    if query:
        assert " selected>" in fast


def test_on_a_value_that_is_no_choice_only_django_s_aria_attributes_differ() -> None:
    # The one known difference (speedups/select.py): Django marks the select
    # invalid and points at an error element this page does not render.
    fast, plain = _selects("rig=no-such-rig")

    assert 'aria-invalid="true" aria-describedby="id_rig_error" ' not in fast
    assert plain.replace('aria-invalid="true" aria-describedby="id_rig_error" ', "") == fast


def _inputs(form: LeaderboardFilterForm, renderer: Any) -> list[str]:
    form.renderer = renderer
    return [str(field) for field in form if not isinstance(field.field.widget, Select)]


@pytest.mark.parametrize(
    "query",
    [
        "",
        "model=qwen3.6&since=2025-07-01&until=2026-01-31&usd_per_kwh=0.31&best=on&failed=on&model_file=7&q=3090",
        # Hostile and invalid values: escaped, and Django's aria-invalid kept.
        f"model={quote(EVIL)}&since={quote(EVIL)}&usd_per_kwh=-1&model_file=0&q=%22a%22+%26+%27b%27",
        "usd_per_kwh=abc&since=2025-13-45&best=0&failed=false",
    ],
)
def test_the_python_inputs_render_what_django_s_templates_render(query: str) -> None:
    form = LeaderboardFilterForm(QueryDict(query), options=OPTIONS)
    form.is_valid()

    fast, plain = _inputs(form, INPUT_RENDERER), _inputs(form, DjangoTemplates())

    assert len(fast) == 8  # text ×2, date ×2, number, checkbox ×2, hidden
    assert fast == plain
    assert not any(EVIL in tag for tag in fast)


def test_the_comparison_tells_an_input_apart() -> None:
    widget = {"type": "text", "name": "q", "value": None, "attrs": {"id": "id_q", "maxlength": "100"}}

    assert input_tag(widget) == '<input type="text" name="q" id="id_q" maxlength="100">'
    assert input_tag({**widget, "attrs": {**widget["attrs"], "checked": True, "required": False}}) == (
        '<input type="text" name="q" id="id_q" maxlength="100" checked>'
    )
    assert input_tag({**widget, "value": mark_safe("<b>")}) != input_tag({**widget, "value": "<b>"})


def test_the_filter_form_writes_its_inputs_without_the_template_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    from django.template.backends.django import DjangoTemplates as Backend

    asked: list[str] = []
    plain = Backend.get_template
    monkeypatch.setattr(Backend, "get_template", lambda self, name: asked.append(name) or plain(self, name))
    form = LeaderboardFilterForm(QueryDict("model=qwen&best=on"), options=OPTIONS)

    assert form.renderer is INPUT_RENDERER
    html = "".join(str(field) for field in form if not isinstance(field.field.widget, Select))
    assert 'name="model" value="qwen"' in html and "checked" in html
    assert asked == []


@pytest.mark.parametrize(
    "value",
    [EVIL, "a & b \"quoted\" 'single'", 3.5, None, 0, mark_safe("<b>kept</b>"), gettext_lazy("Name"), "6× RTX 3090"],
)
def test_the_fast_format_html_gives_djangos_text(value) -> None:
    """speedups/html.py's format_html and format_html_join: Django's text for plain, safe,
    lazy, numeric and hostile values (it only skips Django's lazy-string checks)."""
    assert fast_html.esc(value) == conditional_escape(value)
    assert fast_html.format_html('<a title="{}">{x}</a>', value, x=value) == django_html.format_html(
        '<a title="{}">{x}</a>', value, x=value
    )
    rows = [(value, 1), ("<i>", value)]
    joined = fast_html.format_html_join(" + ", "<td>{}</td><td>{}</td>", rows)
    assert joined == django_html.format_html_join(" + ", "<td>{}</td><td>{}</td>", rows)
    assert isinstance(joined, SafeString)

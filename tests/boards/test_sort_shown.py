"""Every sort key of the leaderboard orders the rows by the value its column shows:
the published figures included (seed 002's $0.02 electricity and $150 API price on
`/?sort=-cost`), the date a row prints (a reported run's source date, not the
import time), names whatever their case. Read from the page as a visitor reads it."""

from __future__ import annotations

import datetime as dt
import html
import re
from collections.abc import Callable
from typing import Any

import pytest

from leaderboard.boards.filters import SORTS
from leaderboard.results.models import Run, Workload
from leaderboard.results.services.published import published_import
from tests.boards import test_bound_pages

pytestmark = pytest.mark.django_db

ROW = re.compile(r"<tr[^>]*>(.*?)</tr>", re.S)
CELL = re.compile(r'<td class="([^"]*)"[^>]*>(.*?)</td>', re.S)


def text(fragment: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", " ", fragment)).replace("\xa0", " ")


def number(raw: str) -> float | None:
    match = re.search(r"-?[\d,]+(?:\.\d+)?", raw)
    return float(match.group(0).replace(",", "")) if match and raw.strip() not in ("", "–") else None


def rows_shown(client: Any, sort: str) -> list[dict[str, str]]:
    """Return the leaderboard's rows for ``sort``: each cell's raw HTML by its column class."""
    page = client.get("/", {"sort": sort, "per_page": 500, "workload": "all"}).content.decode()
    body = page.split('id="leaderboard"', 1)[1].split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    out = []
    for row in ROW.findall(body):
        cells = {}
        for classes, content in CELL.findall(row):
            for name in classes.split():
                if name.startswith("col-"):
                    cells[name] = content
        out.append(cells)
    return out


def _stat(pattern: str) -> Callable[[dict[str, str]], float | None]:
    def read(row: dict[str, str]) -> float | None:
        match = re.search(pattern, text(row["col-decode"]))
        return float(match.group(1).replace(",", "")) if match else None

    return read


def _range(row: dict[str, str]) -> float | None:
    match = re.search(r"range ([\d,.]+)–([\d,.]+)", text(row["col-decode"]))
    return float(match.group(2).replace(",", "")) - float(match.group(1).replace(",", "")) if match else None


def _link(cell: str, css: str) -> str:
    return text(re.search(rf'<a [^>]*class="{css}[^"]*"[^>]*>(.*?)</a>', cell, re.S).group(1)).strip().lower()


def _spec(row: dict[str, str]) -> str | None:
    muted = re.findall(r'<span class="muted">(.*?)</span>', row["col-stack"], re.S)[-1]
    shown = text(muted).split("·")[0].strip().lower()
    return shown or None


def _gpus(row: dict[str, str]) -> str | None:
    names = [text(a).strip().lower() for a in re.findall(r"<a [^>]*>(.*?)</a>", row["col-rig"], re.S)[1:]]
    return min(names) if names else None


def _date(row: dict[str, str]) -> str | None:
    shown = text(re.search(r'class="date muted">(.*?)</span>', row["col-source"]).group(1)).strip()
    return None if shown == "undated" else shown


# sort key → the value the page shows for it (None: a blank cell).
SHOWN: dict[str, Callable[[dict[str, str]], Any]] = {
    "decode": lambda r: number(text(re.search(r'class="strong decode[^>]*>(.*?)</a>', r["col-decode"]).group(1))),
    # "72%"; "–" (no bound) and "spec. › bound" (speculative past it) are blank.
    "bound": lambda r: number(m.group(1)) if (m := re.search(r"([\d,]+)%", text(r["col-bound"]))) else None,
    "n": _stat(r"\bn (\d+)"),
    "stdev": _stat(r"σ ([\d,.]+)"),
    "range": _range,
    "rig": lambda r: text(re.search(r"<a [^>]*>(.*?)</a>", r["col-rig"]).group(1)).strip().lower(),
    "gpu": _gpus,
    "engine": lambda r: text(r["col-stack"].split("<span", 1)[0]).strip().lower(),
    "model": lambda r: _link(r["col-model"], "model-link"),
    "quant": lambda r: text(re.split(r"<br>|<span", r["col-model"].split("</a>", 1)[1])[0]).strip().lower(),
    "spec": _spec,
    "accept": lambda r: number(m.group(1)) if (m := re.search(r"accept ([\d.,]+)", text(r["col-stack"]))) else None,
    "ctx": lambda r: number(text(r["col-ctx"])),
    "power": lambda r: number(text(r["col-power"])),
    "tpkwh": lambda r: number(text(r["col-tpkwh"])),
    "cost": lambda r: number(text(r["col-cost"])),
    "provenance": lambda r: "reported" if "badge reported" in r["col-source"] else "measured",
    "date": _date,
}


@pytest.fixture
def board(board_run, reported_run) -> None:
    """The published runs plus measured runs whose names differ in case, with and without energy."""
    published_import()
    board_run(rig="alpha-rig", model="qwen-small", quant="q4_K_M", tps=[90.0, 91.0, 92.5], ctx=4096)
    board_run(rig="Beta-rig", model="Zeta-model", quant="Q8_0", spec="none", draft=None, energy_j=None)
    board_run(rig="gamma-rig", model="Alpha-Model", gpus=[("a100", 1)], energy_j=400.0, tps=[50.0, 70.0])
    board_run(rig="Delta-rig", model="beta-model", spec="draft", created_at=dt.datetime(2026, 1, 2, tzinfo=dt.UTC))
    # Shares of the memory-bandwidth bound far apart: one GGUF (1.0 GB read per token) at three speeds on a 3090.
    gguf = {"fingerprint": {"model": {"gguf": test_bound_pages.HEADER}}}
    for rig, tps in (("epsilon-rig", [300.0]), ("zeta-rig", [600.0, 610.0]), ("eta-rig", [900.0])):
        board_run(rig=rig, gpus=[("RTX 3090", 1)], model="dense-8b", quant="Q8_0", architecture="dense", tps=tps,
                  spec="none", draft=None, run=gguf)  # fmt: skip


def test_the_table_tells_which_keys_it_can_be_checked_on() -> None:
    assert set(SHOWN) == set(SORTS)


@pytest.mark.parametrize("key", list(SORTS))
@pytest.mark.parametrize("descending", [False, True])
def test_every_sort_orders_rows_by_the_value_shown(client, board, key: str, descending: bool) -> None:
    rows = rows_shown(client, f"-{key}" if descending else key)
    assert len(rows) > 10
    values = [SHOWN[key](row) for row in rows]
    present = [v for v in values if v is not None]
    # Blank cells last, whichever the direction.
    assert values[: len(present)] == present, (key, values)
    # Figures are compared as printed, to the precision shown (a range of two rounded ends).
    slack = 0.11 if key == "range" else 0.0
    for earlier, later in zip(present, present[1:], strict=False):
        if descending:
            assert earlier >= later - slack if slack else earlier >= later, (key, present)
        else:
            assert earlier <= later + slack if slack else earlier <= later, (key, present)


def test_cost_sorts_published_costs_with_electricity(client, board) -> None:
    costs = [text(r["col-cost"]) for r in rows_shown(client, "-cost")]
    assert costs[0].startswith("150") and "API" in costs[0]  # the cloud API's price, most expensive
    assert any(c.startswith("0.02") and "electricity" in c for c in costs)  # seed 002: "Electricity only (~$0.02/MTok)"


def test_dates_filter_on_the_date_shown(client, board) -> None:
    page = client.get(
        "/", {"since": "2026-03-01", "until": "2026-03-31", "per_page": 500, "workload": "all"}
    ).content.decode()
    shown = re.findall(r'class="date muted">(.*?)</span>', page)
    assert shown and set(shown) == {"2026-03"}  # the reported rows dated March 2026, not by their import time
    january = client.get("/", {"since": "2026-01-02", "until": "2026-01-02", "workload": "all"}).content.decode()
    assert re.findall(r'class="date muted">(.*?)</span>', january) == ["2026-01-02"]


def test_the_workload_menu_lists_each_workload_once(client, board) -> None:
    first = Workload.objects.filter(name="space-invaders-html").first()
    # The same name and version with another token budget: a row of its own, one menu entry.
    twin = Workload.objects.create(name=first.name, version=first.version, max_tokens=1234)
    moved = Run.objects.filter(workload=first, provenance="measured").first()
    Run.objects.filter(pk=moved.pk).update(workload=twin)
    page = client.get("/").content.decode()
    menu = page.split('name="workload"', 1)[1].split("</select>", 1)[0]
    labels = re.findall(r"<option[^>]*>(.*?)</option>", menu)
    assert len(labels) == len(set(labels)) and "space-invaders-html v1" in labels
    value = re.search(r'<option value="(\d+)"[^>]*>space-invaders-html v1</option>', menu).group(1)
    filtered = client.get("/", {"workload": value, "per_page": 500}).content.decode()
    shown = {int(pk) for pk in re.findall(r'name="runs" value="(\d+)"', filtered)}
    expected = Run.objects.filter(
        workload__name=first.name, workload__version=first.version, decode_tokens_per_s_mean__isnull=False
    )
    assert moved.pk in shown and shown == set(expected.values_list("pk", flat=True))

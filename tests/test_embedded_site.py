"""The demo's pages on the embedded default (SQLite), in a fresh interpreter:
SQLite sorts NULL first where PostgreSQL sorts it last, so seed 001's sweep
(whose 198K point has no exact token count) must still start at 4K, draw its
198K point in every pane, and its run must be on the leaderboard."""

from __future__ import annotations

from tests.embedded import run_embedded

SCRIPT = r"""
import json, re
import django
django.setup()
from django.core.management import call_command
from django.test import Client
from leaderboard.results.models import Run

call_command("migrate", verbosity=0)
call_command("import_published", verbosity=0)
client = Client(HTTP_HOST="127.0.0.1")
run = Run.objects.get(report_key="six-3090-qwen35-122b-a10b-q6kxl-ctx-sweep")
page = client.get(f"/runs/{run.pk}/").content.decode()
table = re.search(r'<table class="board" id="sweep">(.*?)</table>', page, re.S).group(1)
first_cells = [re.sub(r"<[^>]+>", "", r).strip() for r in re.findall(r"<tr>\s*<td>(.*?)</td>", table, re.S)]
decode_deltas = re.findall(r'<td class="num strong">[^<]*</td><td class="num delta">([^<]*)</td>', table)
figure = json.loads(re.search(r'<script id="sweep-fig" type="application/json">(.*?)</script>', page, re.S).group(1))
board = client.get("/?sort=-tpkwh").content.decode()
ids = [int(m) for m in re.findall(r'name="runs" value="(\d+)"', board)]
with_kwh = set(Run.objects.filter(pk__in=ids, tokens_per_kwh__isnull=False).values_list("pk", flat=True))
print(json.dumps({
    "rows": first_cells,
    "decode_deltas": decode_deltas,
    "points_per_pane": [len(t["x"]) for t in figure["data"]],
    "summary_source": run.summary_source,
    "on_board": run.pk in ids,
    "with_kwh_first": ids[: len(with_kwh)] and set(ids[: len(with_kwh)]) == with_kwh,
}))
"""


def test_the_sqlite_demo_draws_seed_001s_sweep_from_4k(tmp_path):
    result = run_embedded(SCRIPT, tmp_path)

    assert result["rows"] == ["4K", "8K", "16K", "32K", "64K", "128K", "198K"]
    assert result["decode_deltas"][0] == "baseline"
    assert result["decode_deltas"][-1] == "-27.4%"  # 33.6 against 4K's 46.3, not +24.4% against 198K
    assert result["points_per_pane"] == [7] * 7  # the 198K point in every pane
    assert result["summary_source"] == "sweep"
    assert result["on_board"] is True
    assert result["with_kwh_first"] is True  # blanks last on SQLite too

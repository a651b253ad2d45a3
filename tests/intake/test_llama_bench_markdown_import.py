"""A pasted llama-bench Markdown table, through every door: the API, the owner's paste box,
``manage.py import_llama_bench`` and ``python -m runners.llamabench import``. Its rows are
stored as printed summaries (mean ± SD, no samples, n as stated) and shown so."""

from __future__ import annotations

import io
from contextlib import redirect_stdout
from pathlib import Path

import pytest
from django.core.management import call_command
from django.test import Client
from rest_framework.test import APIClient

from leaderboard.results.models import Run, Sample
from runners.llamabench import cli
from tests.intake.test_review import confirmed_user, owner_rig

pytestmark = pytest.mark.django_db
URL = "/api/llama-bench/"
FILES = Path(__file__).resolve().parents[1] / "fixtures" / "llama_bench_md"


def read(name: str) -> str:
    return (FILES / name).read_text()


def post_text(client: APIClient, text: str, query: str = ""):
    return client.post(f"{URL}?{query}" if query else URL, data=text.encode(), content_type="text/plain")


def test_the_issue_table_is_stored_as_a_printed_summary_without_samples(rig_with_token):
    response = post_text(rig_with_token.client, read("issue-27-example.md"))
    assert response.status_code == 201, response.json()
    body = response.json()
    assert (body["format"], body["rows"], body["created"]) == ("md", 1, 1)
    assert body["runs"][0]["summary_source"] == "printed"
    run = Run.objects.select_related("workload", "stack").get()
    assert run.summary_source == "printed" and run.n_samples == 0
    assert run.prefill_tokens_per_s_mean == 5587.84 and run.decode_tokens_per_s_mean is None
    assert run.decode_tokens_per_s_ci95_low is None
    assert run.extra["llama_bench"]["summary"]["stddev_ts"] == 12.06
    assert run.workload.name == "llama-bench pp512 @ d0" and run.workload.repetitions is None
    assert run.stack.build == "b7825-e9fd8dc"
    assert Sample.objects.count() == 0
    again = post_text(rig_with_token.client, read("issue-27-example.md"))
    assert again.status_code == 200 and again.json()["created"] == 0, again.content


def test_a_multi_table_paste_stores_every_row_with_its_tables_build(rig_with_token):
    response = post_text(rig_with_token.client, read("two-pastes-13326-14001.md"), "repetitions=5")
    assert response.status_code == 201, response.json()
    runs = list(Run.objects.select_related("stack", "workload").order_by("id"))
    assert [r.stack.build for r in runs] == ["b5315-8c83449c"] * 4 + ["b5589-a0dd7795"] * 2
    tg = [r for r in runs if r.workload.name == "llama-bench tg128 @ d0"]
    assert [(r.decode_tokens_per_s_mean, r.decode_tokens_per_s_stdev) for r in tg] == [
        (58.90, 0.24),
        (47.56, 0.05),
        (96.83, 0.30),
    ]
    assert {r.workload.repetitions for r in runs} == {5}
    assert {r.extra["llama_bench"]["summary"]["n_label"] for r in runs} == {"5"}


def test_a_malformed_table_gets_a_400_naming_the_line_and_stores_nothing(rig_with_token):
    lines = read("issue-27-example.md").splitlines()
    lines[2] = lines[2].replace("5587.84 ± 12.06", "5587.84 ±")
    response = post_text(rig_with_token.client, "\n".join(lines))
    assert response.status_code == 400
    assert list(response.json()["errors"]) == ["line.3.t/s"]
    pg = post_text(rig_with_token.client, read("geerling-issue-20-with-pg.md"))
    assert pg.status_code == 400 and "line.13.test" in pg.json()["errors"]
    bad_n = post_text(rig_with_token.client, read("issue-27-example.md"), "repetitions=zero")
    assert bad_n.status_code == 400 and "repetitions" in bad_n.json()["errors"]
    assert Run.objects.count() == 0


def test_the_run_page_shows_mean_and_sd_with_n_not_stated_and_no_interval(rig_with_token):
    assert post_text(rig_with_token.client, read("pr-4812-nkvo.md")).status_code == 201
    run = Run.objects.get(workload__name="llama-bench tg128 @ d0", configuration__extra_args=["no_kv_offload=1"])
    html = Client().get(f"/runs/{run.pk}/").content.decode()
    assert "59.99 ± 2.35 t/s as llama-bench printed it" in html
    assert "n not stated" in html
    assert "95% CI" not in html
    assert "llama-bench summary" in html  # the badge, not "measured"
    assert 'title="Measured by a Rigboard runner"' not in html
    board = Client().get("/llama-bench/", {"test": "llama-bench tg128 @ d0", "model": run.model_file_id})
    assert "not stated" in board.content.decode()


def test_the_owner_pastes_a_table_into_the_upload_form():
    user = confirmed_user()
    run, _ = owner_rig(user)
    client = Client()
    client.force_login(user)
    url = f"/me/rigs/{run.rig.pk}/llama-bench/"
    ok = client.post(url, {"paste": read("depths-mistral3-metal.md"), "repetitions": "3"})
    assert ok.status_code == 200, ok.context.get("errors")
    assert ok.context["result"].created == 24
    stored = Run.objects.filter(rig=run.rig, summary_source="printed")
    assert stored.count() == 24 and {r.workload.repetitions for r in stored} == {3}
    refused = client.post(url, {"paste": read("geerling-issue-20-with-pg.md")})
    assert refused.status_code == 400 and "line.13.test" in refused.context["errors"]
    neither = client.post(url, {"notes": "x"})
    assert neither.status_code == 400 and neither.context["form"].errors


def test_the_management_command_imports_a_markdown_file(rig_with_token, tmp_path):
    path = tmp_path / "bench.md"
    path.write_text(read("pr-4812-nkvo.md"))
    out = io.StringIO()
    call_command("import_llama_bench", "--rig", rig_with_token.rig.name, "--repetitions", "2", str(path), stdout=out)
    assert "4 rows (md), 4 new runs" in out.getvalue()
    assert set(Run.objects.values_list("workload__repetitions", flat=True)) == {2}


def test_the_rig_side_cli_checks_a_markdown_file(tmp_path):
    path = tmp_path / "bench.md"
    path.write_text(read("two-pastes-13326-14001.md"))
    out = io.StringIO()
    with redirect_stdout(out):
        assert cli.main(["import", str(path), "--check"]) == 0
    assert out.getvalue().startswith("6 rows: llama-bench pp512 @ d0, llama-bench tg128 @ d0")
    path.write_text(read("geerling-issue-20-with-pg.md"))
    assert cli.main(["import", str(path), "--check"]) == 2

"""POST /api/llama-bench/: a llama-bench output file imported whole, or refused naming row and field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rest_framework.test import APIClient

from leaderboard.results.models import Run, Sample
from leaderboard.results.services.rigs import rig_token_revoke

pytestmark = pytest.mark.django_db
URL = "/api/llama-bench/"
FILES = Path(__file__).resolve().parents[1] / "fixtures" / "llama_bench"


def post_file(client: APIClient, text: str, **params: str):
    query = "&".join(f"{k}={v}" for k, v in params.items())
    return client.post(f"{URL}?{query}" if query else URL, data=text.encode(), content_type="text/plain")


def test_it_stores_each_test_row_as_a_run_with_its_samples(rig_with_token):
    text = (FILES / "gemma-cpu.json").read_text()
    raw = json.loads(text)
    response = post_file(rig_with_token.client, text)
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["format"] == "json"
    assert body["rows"] == body["created"] == 4
    runs = {run.workload.name: run for run in Run.objects.select_related("workload", "configuration", "stack")}
    assert sorted(runs) == [
        "llama-bench pp32 @ d0",
        "llama-bench pp32 @ d64",
        "llama-bench tg8 @ d0",
        "llama-bench tg8 @ d64",
    ]
    tg = runs["llama-bench tg8 @ d64"]
    assert list(tg.samples.values_list("decode_tokens_per_s_server", flat=True)) == pytest.approx(raw[3]["samples_ts"])
    assert tg.decode_tokens_per_s_mean == pytest.approx(raw[3]["avg_ts"], rel=1e-4)
    pp = runs["llama-bench pp32 @ d0"]
    assert pp.decode_tokens_per_s_mean is None
    assert pp.prefill_tokens_per_s_mean == pytest.approx(raw[0]["avg_ts"], rel=1e-4)
    assert pp.configuration.threads == raw[0]["n_threads"]
    assert pp.provenance == "measured"
    # Each test, each depth its own comparison key: pp and tg are never compared.
    assert len({run.comparison_key for run in runs.values()}) == 4
    assert Sample.objects.count() == 8


def test_importing_the_same_file_again_stores_nothing(rig_with_token):
    text = (FILES / "gemma-cpu.jsonl").read_text()
    assert post_file(rig_with_token.client, text).status_code == 201
    again = post_file(rig_with_token.client, text)
    assert again.status_code == 200
    assert again.json()["created"] == 0
    assert Run.objects.count() == 4


def test_it_imports_csv(rig_with_token):
    response = post_file(rig_with_token.client, (FILES / "gemma-cpu.csv").read_text(), file_format="csv")
    assert response.status_code == 201, response.json()
    assert Sample.objects.count() == 4  # one flagged mean per row: CSV has no raw samples


def test_a_bad_row_refuses_the_whole_file_naming_row_and_field(rig_with_token):
    rows = json.loads((FILES / "gemma-cpu.json").read_text())
    rows[2]["avg_ts"] = rows[2]["avg_ts"] * 3
    del rows[3]["n_gen"]
    response = post_file(rig_with_token.client, json.dumps(rows))
    assert response.status_code == 400
    assert set(response.json()["errors"]) == {"rows.2.avg_ts", "rows.3.n_gen"}
    assert Run.objects.count() == 0


def test_a_row_past_the_run_bounds_is_named_with_the_run_field(rig_with_token):
    rows = json.loads((FILES / "gemma-cpu.json").read_text())
    rows[1]["samples_ts"] = [500_000.0, 500_000.0]  # decode over 100k t/s: a unit bug
    rows[1]["avg_ts"] = 500_000.0
    response = post_file(rig_with_token.client, json.dumps(rows))
    assert response.status_code == 400
    assert list(response.json()["errors"]) == [
        "rows.1.samples.0.decode_tokens_per_s_server",
        "rows.1.samples.1.decode_tokens_per_s_server",
    ]
    assert Run.objects.count() == 0


def test_it_refuses_what_is_not_llama_bench_output(rig_with_token):
    response = post_file(rig_with_token.client, "model,t/s\ngemma,12\n")
    assert response.status_code == 400
    assert "Not llama-bench output" in response.json()["errors"]["file"][0]


def test_it_refuses_html_in_the_model_string(rig_with_token):
    rows = json.loads((FILES / "gemma-cpu.json").read_text())
    rows[0]["model_filename"] = "<img src=x onerror=alert(1)>.gguf"
    response = post_file(rig_with_token.client, json.dumps(rows))
    assert response.status_code == 400
    assert list(response.json()["errors"]) == ["rows.0.model_filename"]


def test_it_refuses_another_rigs_name_and_a_revoked_token(rig_with_token, make_rig_with_token):
    make_rig_with_token("other-rig")
    text = (FILES / "gemma-cpu.json").read_text()
    response = post_file(rig_with_token.client, text, rig="other-rig")
    assert response.status_code == 403
    assert "other-rig" in response.json()["errors"]["detail"][0]
    rig_token_revoke(token=rig_with_token.token)
    assert post_file(rig_with_token.client, text).status_code == 401
    assert post_file(APIClient(), text).status_code == 401
    assert Run.objects.count() == 0


def test_it_refuses_an_empty_body(rig_with_token):
    response = post_file(rig_with_token.client, "")
    assert response.status_code == 400
    assert "body" in response.json()["errors"]

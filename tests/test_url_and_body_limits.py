"""A NUL in a URL is a 404 (path) or 400 (query), not a database error (issue 22: ``/gpus/%00/``,
``/llama-bench/compare/?rig=%00``); a chunked body meets the same limit as the
same body sent with a Content-Length."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from django.test import override_settings

from leaderboard.results.models import Run

pytestmark = pytest.mark.django_db
FILE = (Path(__file__).resolve().parent / "fixtures" / "llama_bench" / "gemma-cpu.json").read_bytes()


@pytest.mark.parametrize("url", ["/llama-bench/compare/?rig=%00", "/?gpu=a%00b", "/rigs/1/?x%00=1"])
def test_a_nul_in_a_page_query_is_a_400(client, url):
    response = client.get(url)
    assert response.status_code == 400
    assert b"Null characters" in response.content


@pytest.mark.parametrize("url", ["/gpus/%00/", "/gpus/a%00b/", "/api/rigs/a%00b/"])
def test_a_nul_in_a_path_names_nothing(client, url):
    assert client.get(url).status_code == 404


def test_a_nul_in_an_api_query_is_a_400_naming_the_parameter(client):
    response = client.get("/api/runs/?rig=%00")
    assert response.status_code == 400
    assert response.json() == {"errors": {"rig": ["Null characters are not allowed."]}}


def test_a_url_without_one_is_untouched(client):
    assert client.get("/gpus/RTX%203090/").status_code == 404  # no rig has it: the page's own answer


def post_file(client, *, chunked: bool):
    extra = {"CONTENT_LENGTH": "", "HTTP_TRANSFER_ENCODING": "chunked", "wsgi.input": io.BytesIO(FILE)}
    if chunked:
        extra["wsgi.input_terminated"] = True
        return client.generic("POST", "/api/llama-bench/", b"", content_type="text/plain", **extra)
    return client.post("/api/llama-bench/", data=FILE, content_type="text/plain")


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
def test_a_llama_bench_file_over_the_json_limit_is_taken_either_way(rig_with_token, chunked):
    with override_settings(RIGBOARD_MAX_BODY_BYTES=len(FILE) // 4, RIGBOARD_LLAMA_BENCH_MAX_BYTES=len(FILE) * 2):
        response = post_file(rig_with_token.client, chunked=chunked)
    assert response.status_code == 201, response.content[:300]
    assert Run.objects.count() == 4


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
def test_a_llama_bench_file_over_its_own_limit_is_a_413_either_way(rig_with_token, chunked):
    with override_settings(RIGBOARD_LLAMA_BENCH_MAX_BYTES=len(FILE) // 2):
        response = post_file(rig_with_token.client, chunked=chunked)
    assert response.status_code == 413
    assert Run.objects.count() == 0

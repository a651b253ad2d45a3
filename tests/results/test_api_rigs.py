"""GET /api/rigs/ and /api/rigs/{name}/: public rig records, never their tokens."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db


def test_it_lists_rigs_with_gpus_and_run_counts(api_client, make_rig, make_run, rig_with_token):
    rig = make_rig(name="six-3090", gpus=[("RTX 3090", 6)], os="Ubuntu 24.04")
    make_run(rig=rig)
    make_run(rig=rig)
    response = api_client.get("/api/rigs/")
    assert response.status_code == 200
    rows = {r["name"]: r for r in response.json()["results"]}
    assert set(rows) == {"six-3090", "api-rig"}
    assert rows["six-3090"]["gpu_summary"] == "6× RTX 3090"
    assert rows["six-3090"]["n_runs"] == 2
    assert rows["six-3090"]["os"] == "Ubuntu 24.04"
    assert rows["api-rig"]["n_runs"] == 0
    text = response.content.decode()
    assert rig_with_token.raw not in text and rig_with_token.token.key_hash not in text
    assert "token" not in text.lower()


def test_it_filters_rigs_by_gpu(api_client, make_rig):
    make_rig(name="a", gpus=[("RTX 3090", 1)])
    make_rig(name="b", gpus=[("RTX 5090", 1), ("RTX 3090 Ti", 1)])
    response = api_client.get("/api/rigs/", {"gpu": "3090"})
    assert [r["name"] for r in response.json()["results"]] == ["a", "b"]
    response = api_client.get("/api/rigs/", {"gpu": "5090"})
    assert [r["name"] for r in response.json()["results"]] == ["b"]


def test_it_shows_one_rig_by_name_even_with_unusual_characters(api_client, make_rig):
    make_rig(name="Olares One / <b>home</b> ☃", gpus=[("RTX 5090 Mobile", 1)])
    response = api_client.get("/api/rigs/Olares One / <b>home</b> ☃/")
    assert response.status_code == 200
    assert response.json()["name"] == "Olares One / <b>home</b> ☃"
    assert api_client.get("/api/rigs/nope/").status_code == 404


def test_rigs_cannot_be_written_through_the_api(rig_with_token):
    response = rig_with_token.client.post("/api/rigs/", {"name": "x"}, format="json")
    assert response.status_code == 405

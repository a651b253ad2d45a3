"""/api/schema/ and /api/docs/: the OpenAPI schema and a Swagger UI served locally."""

from __future__ import annotations

import re

import pytest
from django.contrib.staticfiles import finders

pytestmark = pytest.mark.django_db


def test_it_serves_an_openapi_schema_with_every_endpoint(api_client):
    response = api_client.get("/api/schema/", {"format": "json"})
    assert response.status_code == 200
    schema = response.json()
    assert schema["openapi"].startswith("3.")
    paths = schema["paths"]
    assert {"get", "post"} <= set(paths["/api/runs/"])
    assert "post" in paths["/api/runs/{uuid}/samples/"]
    assert "post" in paths["/api/runs/{uuid}/finish/"]
    bulk_body = paths["/api/runs/bulk/"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert bulk_body["properties"]["runs"]["items"] == {"$ref": "#/components/schemas/RunCreateInput"}
    assert {"400", "401", "413"} <= set(paths["/api/runs/bulk/"]["post"]["responses"])
    assert "get" in paths["/api/rigs/{name}/"]
    list_params = {p["name"] for p in paths["/api/runs/"]["get"]["parameters"]}
    assert {"rig", "gpu", "engine", "build", "model", "quantization", "speculative_type", "workload"} <= list_params
    assert {"provenance", "status", "created_after", "created_before", "ordering", "page"} <= list_params
    assert schema["components"]["securitySchemes"]["rigToken"]["name"] == "Authorization"
    create = schema["components"]["schemas"]["RunCreateInput"]
    assert "provenance" not in create["properties"]
    assert "decode_tokens_per_s_mean" not in create["properties"]


def test_the_docs_page_loads_swagger_ui_from_our_own_static_files(api_client):
    response = api_client.get("/api/docs/")
    assert response.status_code == 200
    html = response.content.decode()
    sources = re.findall(r'(?:src|href)="([^"]+)"', html)
    assert any(s.endswith("swagger-ui-bundle.js") for s in sources)
    for url in sources:
        assert not url.startswith(("http://", "https://", "//")), url
    for url in sources:
        if url.startswith("/static/"):
            assert finders.find(url.removeprefix("/static/")), url


def test_the_schema_declares_what_the_endpoints_answer(api_client):
    schema = api_client.get("/api/schema/", {"format": "json"}).json()
    paths, components = schema["paths"], schema["components"]["schemas"]

    jobs_list = paths["/api/jobs/"]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
    assert jobs_list["$ref"].endswith("/PaginatedJobOutputList")
    assert components["JobOutput"]["properties"]["run"]["nullable"] is True
    assert components["JobOutput"]["properties"]["created_by"]["nullable"] is True
    assert components["RunListItem"]["properties"]["source"]["nullable"] is True

    error = {"$ref": "#/components/schemas/Error"}
    for path, method, codes in [
        ("/api/runs/", "get", {"400", "404"}),
        ("/api/runs/", "post", {"400", "401", "403", "409", "413", "429", "503"}),
        ("/api/runs/{uuid}/", "get", {"404"}),
        ("/api/rigs/{name}/", "get", {"404"}),
        ("/api/jobs/", "get", {"400", "401", "403"}),
        ("/api/jobs/{job_id}/status/", "post", {"400", "401", "403", "404", "409"}),
    ]:
        responses = paths[path][method]["responses"]
        assert codes <= set(responses), (path, method, sorted(responses))
        for code in codes:
            assert responses[code]["content"]["application/json"]["schema"] == error, (path, code)


def test_an_unrouted_api_url_is_a_json_404_and_a_site_url_an_html_one(api_client):
    api = api_client.get("/api/jobs/not-a-number/")
    site = api_client.get("/no-such-page/")

    assert api.status_code == 404 and api.json() == {"errors": {"detail": ["Not found."]}}
    assert site.status_code == 404 and site["Content-Type"].startswith("text/html")

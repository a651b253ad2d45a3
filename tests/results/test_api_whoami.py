"""GET /api/whoami/: the rig a token acts for, its recorded hardware and the service's
clock; read-only, never the token itself, and 401 without a valid token."""

from __future__ import annotations

import datetime as dt

import pytest
from rest_framework.test import APIClient

from leaderboard.results.models import RigToken
from leaderboard.results.services.rigs import GpuSpec, rig_token_revoke

pytestmark = pytest.mark.django_db


def test_it_names_the_tokens_rig_with_its_hardware(make_rig_with_token):
    rig = make_rig_with_token(name="two-3090", gpus=[GpuSpec(model="RTX 3090", vram_gb=24, count=2, power_limit_w=350)])
    before = dt.datetime.now(dt.UTC)
    response = rig.client.get("/api/whoami/")
    assert response.status_code == 200
    body = response.json()
    assert body["rig"]["name"] == "two-3090"
    assert body["rig"]["gpus"] == [{"model": "RTX 3090", "vram_gb": 24.0, "count": 2, "power_limit_w": 350.0}]
    assert body["token"]["prefix"] == rig.raw[:10] and body["token"]["label"] == "test"
    assert rig.raw not in response.content.decode() and rig.token.key_hash not in response.content.decode()
    assert abs(dt.datetime.fromisoformat(body["server_time"]) - before) < dt.timedelta(seconds=30)
    # Asking is the rig's contact.
    assert RigToken.objects.get(pk=rig.token.pk).last_used_at is not None


@pytest.mark.parametrize("header", [None, "Token rb_not-a-token", "Bearer x"])
def test_it_answers_401_without_a_valid_token(header):
    client = APIClient()
    if header:
        client.credentials(HTTP_AUTHORIZATION=header)
    response = client.get("/api/whoami/")
    assert response.status_code == 401
    assert "errors" in response.json()


def test_a_revoked_token_is_refused(rig_with_token):
    rig_token_revoke(token=rig_with_token.token)
    response = rig_with_token.client.get("/api/whoami/")
    assert response.status_code == 401
    assert "revoked" in response.content.decode()


def test_it_is_read_only(rig_with_token):
    assert rig_with_token.client.post("/api/whoami/", {}, format="json").status_code == 405


def test_the_schema_describes_it(api_client):
    schema = api_client.get("/api/schema/", {"format": "json"}).json()
    operation = schema["paths"]["/api/whoami/"]["get"]
    assert set(operation["responses"]) >= {"200", "401"}
    assert set(operation) >= {"security"} and list(schema["paths"]["/api/whoami/"]) == ["get"]
    update = schema["paths"]["/api/whoami/hardware/"]["put"]
    assert set(update["responses"]) >= {"200", "400", "401"} and "requestBody" in update


def test_a_rig_replaces_its_hardware_with_what_it_detected(make_rig_with_token):
    rig = make_rig_with_token(name="grown-rig", gpus=[GpuSpec(model="RTX 3090", vram_gb=24, count=1)])
    body = {
        "gpus": [{"model": "NVIDIA GeForce RTX 4090", "vram_gb": 24, "count": 2, "power_limit_w": 450}],
        "cpu": "AMD EPYC",
        "ram_gb": 23.5,
        "os": "Debian GNU/Linux 12 (bookworm)",
    }
    response = rig.client.put("/api/whoami/hardware/", body, format="json")
    assert response.status_code == 200
    assert response.json()["rig"]["gpus"] == [
        {"model": "NVIDIA GeForce RTX 4090", "vram_gb": 24.0, "count": 2, "power_limit_w": 450.0}
    ]
    stored = type(rig.rig).objects.get(pk=rig.rig.pk)
    assert (stored.name, stored.cpu, stored.ram_gb) == ("grown-rig", "AMD EPYC", 23.5)
    assert [(g.model, g.count) for g in stored.gpus.all()] == [("NVIDIA GeForce RTX 4090", 2)]
    # Without gpus (a rig whose NVML is broken) the GPUs on record are kept.
    assert rig.client.put("/api/whoami/hardware/", {"ram_gb": 64}, format="json").status_code == 200
    assert stored.gpus.count() == 1 and type(rig.rig).objects.get(pk=rig.rig.pk).ram_gb == 64


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"gpus": [{"vram_gb": 24}]}, "gpus.0.model"),
        ({"gpus": [{"model": "x", "count": 0}]}, "gpus.0.count"),
        ({"ram_gb": -1}, "ram_gb"),
        ({"cpu": "x" * 201}, "cpu"),
    ],
)
def test_bad_hardware_is_a_400_naming_the_field(rig_with_token, body, field):
    response = rig_with_token.client.put("/api/whoami/hardware/", body, format="json")
    assert response.status_code == 400
    assert list(response.json()["errors"]) == [field]


def test_only_a_token_may_update_hardware(api_client):
    assert api_client.put("/api/whoami/hardware/", {"ram_gb": 1}, format="json").status_code == 401

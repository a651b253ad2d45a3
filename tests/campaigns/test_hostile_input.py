"""The campaigns API against hostile bodies (issue 22's reproducers, several found by
fuzzing): each is a 4xx naming the field, nothing is stored, and the campaign's
pages and API keep answering 200, also over figures stored before the checks."""

from __future__ import annotations

import json
import math

import pytest

from leaderboard.campaigns.models import Campaign, CampaignStatus, Trial
from tests.fixtures.api import post_json

pytestmark = pytest.mark.django_db

SPACE = {"threads": [1, 2]}


def spec_body(**overrides):
    data = {"name": "hostile", "strategy": "grid", "space": SPACE, "budget": {"trials": 2}, "repetitions": 1}
    data.update(overrides)
    return data


def post_raw(client, url: str, text: str):
    return client.post(url, data=text.encode("utf-8", "surrogatepass"), content_type="application/json")


def replace_raw(body: dict, marker: str, literal: str) -> str:
    """Return ``body`` as JSON with the string ``"<marker>"`` replaced by ``literal`` (a JSON
    text json.dumps cannot write: 1e999, a 40-digit integer, a \\u0000 escape)."""
    return json.dumps(body).replace(json.dumps(marker), literal)


@pytest.fixture
def campaign(rig_with_token):
    response = post_json(rig_with_token.client, "/api/campaigns/", spec_body())
    assert response.status_code == 201, response.json()
    return Campaign.objects.get(pk=response.json()["id"])


def assert_readable(client, campaign_id: int) -> None:
    """The campaign's API detail, page and list answer 200 with JSON numbers only."""
    detail = client.get(f"/api/campaigns/{campaign_id}/")
    assert detail.status_code == 200
    json.loads(detail.content, parse_constant=lambda name: pytest.fail(f"{name} in the answer"))
    assert client.get(f"/campaigns/{campaign_id}/").status_code == 200
    assert client.get("/api/campaigns/").status_code == 200


@pytest.mark.parametrize(
    ("field", "literal"),
    [
        ("repetitions", "1e40"),
        ("repetitions", "10000000000000000000000000000000000000000"),
        ("seed", "1e40"),
        ("seed", "-1"),
        ("confirm_repetitions", "1e40"),
        ("budget.trials", "1e40"),
        ("budget.wall_time_s", "1e308"),
        ("budget.wall_time_s", "1e999"),
        ("name", json.dumps("x" * 100_000)),
        ("name", '"a\\u0000b"'),
        ("name", '"a\\ud800b"'),
        ("constraints", json.dumps([{"metric": "ttft_ms", "max": 1}] * 10_000)),
    ],
)
def test_a_campaign_with_an_unbounded_value_is_refused_naming_the_field(rig_with_token, field, literal):
    body = spec_body()
    *parents, last = field.split(".")
    target = body
    for name in parents:
        target = target[name]
    target[last] = "@@here@@"
    response = post_raw(rig_with_token.client, "/api/campaigns/", replace_raw(body, "@@here@@", literal))
    assert response.status_code == 400, response.content[:300]
    assert field in response.json()["errors"], response.json()
    assert Campaign.objects.count() == 0


def test_a_hundred_thousand_nested_brackets_are_a_400_not_a_recursion_error(rig_with_token, campaign):
    nested = "[" * 100_000 + "]" * 100_000
    for url in ("/api/campaigns/", f"/api/campaigns/{campaign.pk}/trials/", f"/api/campaigns/{campaign.pk}/finish/"):
        response = post_raw(rig_with_token.client, url, '{"name": ' + nested + "}")
        assert response.status_code == 400, (url, response.content[:300])
        assert "body" in response.json()["errors"]
    assert Campaign.objects.count() == 1 and Trial.objects.count() == 0


def test_a_base_config_nested_deep_is_refused(rig_with_token):
    deep: dict = {}
    node = deep
    for _ in range(50):
        node["x"] = {}
        node = node["x"]
    response = post_json(rig_with_token.client, "/api/campaigns/", spec_body(base_config={"extra": deep}))
    assert response.status_code == 400 and "base_config" in response.json()["errors"]


def trial(**overrides):
    data = {"number": 1, "params": {"threads": 2}, "state": "complete", "value": 41.5, "samples": [41.0, 42.0]}
    data.update(overrides)
    return data


@pytest.mark.parametrize(
    ("field", "literal"),
    [
        ("value", "1e999"),
        ("value", "-1e999"),
        ("value", "1e308"),
        ("value", "-1e308"),
        ("number", "10000000000000000000000000000000000000000"),
        ("failure_reason", '"why\\u0000"'),
        ("failure_reason", '"why\\udc00"'),
        ("log_tail", '"tail\\u0000"'),
        ("log_tail", '"tail\\ud83d"'),
        ("duration_s", "1e308"),
        ("measured_s", "1e308"),
        ("measured_s", "-1"),
        ("samples", "[1e308]"),
        ("params", '{"threads": 10000000000000000000000000000000000000000}'),
        ("metrics", '{"decode_tokens_per_s": 1e999}'),
        ("metrics", json.dumps({f"m{i}": 1.0 for i in range(1000)})),
        ("log_tail", json.dumps("x" * 30_000)),
    ],
)
def test_a_hostile_trial_is_refused_naming_the_field_and_nothing_is_stored(rig_with_token, campaign, field, literal):
    body = trial(**{field: "@@here@@"})
    response = post_raw(
        rig_with_token.client, f"/api/campaigns/{campaign.pk}/trials/", replace_raw(body, "@@here@@", literal)
    )
    assert response.status_code == 400, response.content[:300]
    assert any(path == field or path.startswith(f"{field}.") for path in response.json()["errors"]), response.json()
    assert Trial.objects.count() == 0
    assert_readable(rig_with_token.client, campaign.pk)


@pytest.mark.parametrize("where", ["\\u0000", "\\ud800"])
def test_a_metric_name_postgres_cannot_store_is_refused(rig_with_token, campaign, where):
    text = json.dumps(trial()).replace('"samples"', f'"metrics": {{"bad{where}": 1}}, "samples"')
    response = post_raw(rig_with_token.client, f"/api/campaigns/{campaign.pk}/trials/", text)
    assert response.status_code == 400, response.content[:300]
    assert any(path.startswith("metrics") for path in response.json()["errors"])
    assert Trial.objects.count() == 0


def test_measured_s_is_taken_and_answered(rig_with_token, campaign):
    response = post_json(
        rig_with_token.client, f"/api/campaigns/{campaign.pk}/trials/", trial(duration_s=9.0, measured_s=2.5)
    )
    assert response.status_code == 201, response.json()
    assert response.json()["measured_s"] == 2.5 and response.json()["overhead_s"] == 6.5
    assert Trial.objects.get().measured_s == 2.5


@pytest.mark.parametrize("url_end", ["finish", "cancel"])
def test_a_closing_reason_must_be_text(rig_with_token, campaign, url_end):
    body = replace_raw({"status": "finished", "reason": "@@here@@"}, "@@here@@", "1e308")
    response = post_raw(rig_with_token.client, f"/api/campaigns/{campaign.pk}/{url_end}/", body)
    assert response.status_code == 400 and "reason" in response.json()["errors"], response.json()
    campaign.refresh_from_db()
    assert campaign.status == CampaignStatus.RUNNING


def test_a_finish_with_an_unknown_status_is_refused(rig_with_token, campaign):
    response = post_json(rig_with_token.client, f"/api/campaigns/{campaign.pk}/finish/", {"status": "won"})
    assert response.status_code == 400 and "status" in response.json()["errors"]


def test_figures_stored_before_the_checks_never_break_the_pages(rig_with_token, campaign):
    """Rows written before the schema (Infinity, ±1e308, whose sums overflow) read as null."""
    Trial.objects.create(
        campaign=campaign, number=1, params={"threads": 1}, state="complete", value=math.inf,
        samples=[1e308, 1e308], metrics={"decode_tokens_per_s": 1e308}, duration_s=math.inf,
    )  # fmt: skip
    Trial.objects.create(campaign=campaign, number=2, params={"threads": 2}, state="complete", value=-1e308)
    Trial.objects.create(campaign=campaign, number=3, params={"threads": 2}, state="complete", value=10.0)
    assert_readable(rig_with_token.client, campaign.pk)
    detail = rig_with_token.client.get(f"/api/campaigns/{campaign.pk}/").json()
    assert [t["value"] for t in detail["trials"]] == [None, None, 10.0]
    again = post_json(rig_with_token.client, f"/api/campaigns/{campaign.pk}/trials/", trial(number=1))
    assert again.status_code == 200 and again.json()["value"] is None
    cancelled = post_json(rig_with_token.client, f"/api/campaigns/{campaign.pk}/cancel/", {})
    assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"
    assert_readable(rig_with_token.client, campaign.pk)


def test_a_closed_campaign_answers_409_and_the_schema_says_so(rig_with_token, campaign, client):
    finished = post_json(rig_with_token.client, f"/api/campaigns/{campaign.pk}/finish/", {"status": "finished"})
    assert finished.status_code == 200
    response = post_json(rig_with_token.client, f"/api/campaigns/{campaign.pk}/trials/", trial(number=5))
    assert response.status_code == 409 and "campaign" in response.json()["errors"]
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    answers = schema["paths"]["/api/campaigns/{campaign_id}/trials/"]["post"]["responses"]
    assert "409" in answers and answers["409"]["content"]["application/json"]["schema"]["$ref"].endswith("/Error")

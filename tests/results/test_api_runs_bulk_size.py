"""A bulk body is held to its own limit (RIGBOARD_MAX_BULK_BODY_BYTES), not to the
single run's (RIGBOARD_MAX_BODY_BYTES = Django's DATA_UPLOAD_MAX_MEMORY_SIZE)."""

import json

import pytest
from django.test import override_settings

from leaderboard.results.models import Run
from tests.fixtures.api import api_run_payload


@pytest.mark.django_db
@override_settings(RIGBOARD_MAX_BODY_BYTES=64 * 1024, DATA_UPLOAD_MAX_MEMORY_SIZE=64 * 1024)
def test_a_bulk_body_over_the_single_run_limit_but_within_its_own_is_stored(rig_with_token):
    runs = [api_run_payload() for _ in range(40)]
    body = json.dumps({"runs": runs})
    assert len(body) > 64 * 1024  # over the single-run limit
    response = rig_with_token.client.post("/api/runs/bulk/", body, content_type="application/json")
    assert response.status_code == 200, response.content[:500]
    assert response.json()["created"] == 40 and Run.objects.count() == 40

"""RigTokenAuthentication: hashed lookup, revocation, last-used bookkeeping."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from leaderboard.results.models import RigToken
from leaderboard.results.models.rigs import hash_token
from tests.fixtures.api import api_run_payload, post_json

pytestmark = pytest.mark.django_db


def test_only_the_hash_of_a_token_is_stored(rig_with_token):
    token = RigToken.objects.get(pk=rig_with_token.token.pk)
    assert token.key_hash == hash_token(rig_with_token.raw)
    assert rig_with_token.raw not in {token.key_hash, token.prefix, token.label}
    assert rig_with_token.raw.startswith(token.prefix)


def test_a_use_records_last_used_at_at_most_once_a_minute(rig_with_token):
    client = rig_with_token.client
    assert post_json(client, "/api/runs/", api_run_payload()).status_code == 201
    first = RigToken.objects.get(pk=rig_with_token.token.pk).last_used_at
    assert first is not None and timezone.now() - first < timedelta(seconds=30)

    with CaptureQueriesContext(connection) as ctx:
        post_json(client, "/api/runs/", api_run_payload())
    assert not any('UPDATE "results_rigtoken"' in q["sql"] for q in ctx.captured_queries)
    assert RigToken.objects.get(pk=rig_with_token.token.pk).last_used_at == first

    RigToken.objects.filter(pk=rig_with_token.token.pk).update(last_used_at=first - timedelta(minutes=2))
    post_json(client, "/api/runs/", api_run_payload())
    later = RigToken.objects.get(pk=rig_with_token.token.pk).last_used_at
    assert later is not None and later > first


def test_a_read_with_a_bad_token_is_refused_rather_than_served_anonymously(api_client, db):
    """A wrong token is a client bug worth surfacing, even on a public read."""
    api_client.credentials(HTTP_AUTHORIZATION="Token wrong")
    assert api_client.get("/api/runs/").status_code == 401


@pytest.mark.parametrize("header", ["Token", "Token a b", "Bearer something"])
def test_malformed_or_foreign_headers_do_not_authenticate(rig_with_token, api_client, header):
    api_client.credentials(HTTP_AUTHORIZATION=header)
    assert post_json(api_client, "/api/runs/", api_run_payload()).status_code == 401


def test_a_staff_session_cannot_submit_runs(api_client, django_user_model, rig_with_token):
    """Staff manage data in the admin; only a rig's token submits measurements."""
    staff = django_user_model.objects.create_user("staff", password="pw", is_staff=True, is_superuser=True)
    api_client.force_authenticate(user=staff)
    response = post_json(api_client, "/api/runs/", api_run_payload())
    assert response.status_code == 403

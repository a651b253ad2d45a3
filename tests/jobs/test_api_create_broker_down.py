"""POST /api/jobs/ with the broker down, as deployed (gunicorn, the broker and
the result backend both a Redis that is not there): a prompt 503 naming the
broker, the job recorded as failed with the broker's error, nothing 'queued'."""

from __future__ import annotations

import secrets
import time

import pytest
import requests
from django.conf import settings
from django.contrib import auth
from django.contrib.auth.models import User
from django.contrib.sessions.backends.db import SessionStore

from leaderboard.jobs.models import BenchmarkJob
from tests.fixtures.gunicorn import free_port
from tests.jobs.conftest import attach_spec

pytestmark = pytest.mark.django_db(transaction=True)

# Three tries of the publish (core/queues.py RETRY_POLICY, ~4 s) and the connects;
# before the fix the result subscription alone retried for ~20 s.
PROMPT_S = 10.0


def _staff_headers() -> dict[str, str]:
    """A logged-in staff session and CSRF pair, sent by hand: the deployed
    cookies are Secure and this gunicorn speaks plain HTTP."""
    staff = User.objects.create_user("ops", is_staff=True)
    session = SessionStore()
    session[auth.SESSION_KEY] = str(staff.pk)
    session[auth.BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
    session[auth.HASH_SESSION_KEY] = staff.get_session_auth_hash()
    session.create()
    csrf = secrets.token_hex(16)
    return {"Cookie": f"csrftoken={csrf}; sessionid={session.session_key}", "X-CSRFToken": csrf}


def test_a_job_for_a_broker_that_is_down_is_answered_promptly_and_truthfully(gunicorn_service, make_rig):
    nothing_there = f"redis://127.0.0.1:{free_port()}/0"
    # This process's SECRET_KEY: the staff session below is signed with it.
    url = gunicorn_service(CELERY_BROKER_URL=nothing_there, LOG_LEVEL="CRITICAL", SECRET_KEY=settings.SECRET_KEY)
    make_rig(name="bench-a")
    headers = _staff_headers()

    started = time.monotonic()
    response = requests.post(
        f"{url}/api/jobs/", json={"rig": "bench-a", "spec": attach_spec()}, headers=headers, timeout=60
    )
    took_s = time.monotonic() - started

    assert response.status_code == 503, response.text[:300]
    job = BenchmarkJob.objects.get()
    message = response.json()["errors"]["rig"][0]
    assert f"job {job.pk} was not queued" in message and "could not reach the Celery broker" in message
    assert job.status == "failed" and "could not reach the Celery broker" in job.error
    assert took_s < PROMPT_S, f"answered after {took_s:.1f} s"

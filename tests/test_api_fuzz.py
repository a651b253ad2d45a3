"""A bounded schemathesis run over every operation of the OpenAPI schema: no
answer may be a 5xx, and every answer must match the schema (its status code
declared, its body valid against the declared schema).

The service is called in-process through its WSGI application (the whole
middleware stack, the real PostgreSQL and Redis), as a rig with a valid token
and as a staff session (with its CSRF token), on rows that exist: a share of
the cases use a real run uuid, rig name and job id instead of generated ones so
the fuzzing reaches past the 404s. Fixed seed, a few thousand cases at most and
a time cap keep it a test, not a campaign (issue 11, "Make it stay this way")."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import Any

import hypothesis
import pytest
import schemathesis
from django.contrib.auth.models import User
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from django.test import Client
from hypothesis import strategies as st
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from leaderboard.jobs.services import jobs_enqueue
from tests.fixtures.api import api_run_payload, post_json
from tests.jobs.conftest import attach_spec

pytestmark = [pytest.mark.django_db, pytest.mark.slow]

SEED = 20261123
CASES_PER_OPERATION = 150  # 21 operations: ≈ 3,150 cases at most
TIME_CAP_S = 75.0
MIN_SHARE_S = 2.0
# Each operation gets at least this many cases whatever the clock says, so the
# total (≥ 500 over ≥ 17 operations) does not depend on how busy the machine is;
# the time cap only bounds the cases beyond it.
MIN_CASES_PER_OPERATION = 30
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
# A fixed secret for the CSRF cookie and header of the staff session (Django
# accepts an unmasked 32-character secret in the header).
CSRF = "fuzzfuzzfuzzfuzzfuzzfuzzfuzzfuzz"


@pytest.fixture
def in_process_requests() -> Iterator[None]:
    """Keep the test's transaction open across requests, as Django's test client
    does: the real handler closes connections at the start and end of each."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        yield
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)


@pytest.fixture
def known(rig_with_token, celery_broker) -> dict[str, Any]:
    """Rows the fuzzer aims at: a finished and a running run of the token's rig, its job."""
    finished = api_run_payload()
    running = api_run_payload(status="running", finished_at=None)
    for body in (finished, running):
        assert post_json(rig_with_token.client, "/api/runs/", body).status_code == 201
    job = jobs_enqueue(rig=rig_with_token.rig, kind="suite", spec=attach_spec(), time_limit_s=600)
    staff = User.objects.create_user("fuzz-staff", password="pw-fuzz-123", is_staff=True)
    client = Client()
    client.force_login(staff)
    return {
        "token": rig_with_token.raw,
        "session": client.cookies["sessionid"].value,
        "path": {
            "uuid": [finished["uuid"], running["uuid"]],
            "name": [rig_with_token.rig.name],
            "job_id": [job.pk],
        },
    }


def _as_staff(method: str, path: str) -> bool:
    """Staff queue and read jobs; the rig's token does everything else."""
    return path.startswith("/api/jobs/") and not path.endswith("/status/")


class _TimeUp(Exception):
    """An operation's share of the time cap is spent: stop generating cases for it."""


def _fuzzer(operation: Any, known: dict[str, Any], deadline: float, counts: dict[str, int]) -> Any:
    """Return a Hypothesis test of ``operation`` that calls it until the deadline,
    once it has had MIN_CASES_PER_OPERATION cases (then raises _TimeUp, so that no
    more cases are generated)."""
    label = f"{operation.method.upper()} {operation.path}"
    staff = _as_staff(operation.method, operation.path)
    headers = {"X-CSRFToken": CSRF} if staff else {"Authorization": f"Token {known['token']}"}
    cookies = {"sessionid": known["session"], "csrftoken": CSRF} if staff else {}
    strategy = st.one_of(
        operation.as_strategy(generation_mode=schemathesis.GenerationMode.POSITIVE),
        operation.as_strategy(generation_mode=schemathesis.GenerationMode.NEGATIVE),
    )

    @hypothesis.seed(SEED)
    @hypothesis.settings(
        max_examples=CASES_PER_OPERATION,
        deadline=None,
        database=None,
        phases=[hypothesis.Phase.explicit, hypothesis.Phase.generate],
        suppress_health_check=list(hypothesis.HealthCheck),
    )
    @hypothesis.given(case=strategy, aim=st.booleans(), pick=st.integers(0, 1))
    def fuzz(case: Any, aim: bool, pick: int) -> None:
        if time.monotonic() > deadline and counts.get(label, 0) >= MIN_CASES_PER_OPERATION:
            raise _TimeUp
        if aim and case.path_parameters:
            for name, values in known["path"].items():
                if name in case.path_parameters:
                    case.path_parameters[name] = values[pick % len(values)]
        response = case.call(headers=headers, cookies=cookies)
        counts[label] = counts.get(label, 0) + 1
        case.validate_response(response, checks=CHECKS)

    return fuzz


@pytest.fixture
def unthrottled(settings) -> None:
    """Write throttling off: thousands of writes a minute are the point here
    (429 is declared in the schema all the same)."""
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"rig_token": None, "account": None},
    }


def test_no_operation_answers_a_5xx_or_breaks_the_schema(known, in_process_requests, unthrottled):
    schema = schemathesis.openapi.from_wsgi("/api/schema/?format=json", get_wsgi_application())
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) * MIN_CASES_PER_OPERATION >= 500
    start, counts = time.monotonic(), {}  # type: ignore[var-annotated]

    for position, operation in enumerate(operations, start=1):
        # Each operation's share of the cap, and at least a few seconds: on a
        # loaded machine a slow one cannot starve the rest.
        deadline = max(start + TIME_CAP_S * position / len(operations), time.monotonic() + MIN_SHARE_S)
        with contextlib.suppress(_TimeUp):
            _fuzzer(operation, known, deadline, counts)()

    total = sum(counts.values())
    print(f"schemathesis: {total} cases over {len(counts)} operations in {time.monotonic() - start:.0f} s: {counts}")
    # Every operation reached (how many cases fit in the cap depends on the machine: not asserted).
    assert len(counts) == len(operations)


STATEFUL_STEPS = 30


def test_a_campaign_created_then_its_trials_posted_never_answers_a_5xx(
    rig_with_token, in_process_requests, unthrottled
):
    """Schemathesis follows the schema's links from POST /api/campaigns/ (a created
    campaign's id) to its trials, finish, cancel and detail: the stateful half."""
    schema = schemathesis.openapi.from_wsgi("/api/schema/?format=json", get_wsgi_application()).include(
        path_regex="^/api/campaigns/"
    )
    # Valid bodies only: a chain needs a campaign created (the negative half is the test above).
    schema.config.generation.update(modes=[schemathesis.GenerationMode.POSITIVE])
    links = schema.raw_schema["paths"]["/api/campaigns/"]["post"]["responses"]["201"]["links"]
    assert links["RecordATrial"]["operationId"] == "campaigns_trials_create"
    token = rig_with_token.raw
    seen: dict[str, int] = {}

    class Campaigns(schema.as_state_machine()):  # type: ignore[misc]
        def get_call_kwargs(self, case: Any) -> dict[str, Any]:
            return {"headers": {"Authorization": f"Token {token}"}}

        def validate_response(self, response: Any, case: Any, additional_checks: Any = None, **kwargs: Any) -> None:
            label = f"{case.operation.method.upper()} {case.operation.path} {response.status_code}"
            seen[label] = seen.get(label, 0) + 1
            case.validate_response(response, checks=CHECKS)

    Campaigns.run(
        settings=hypothesis.settings(
            max_examples=STATEFUL_STEPS,
            stateful_step_count=4,
            deadline=None,
            database=None,
            derandomize=True,
            suppress_health_check=list(hypothesis.HealthCheck),
        )
    )
    print(f"schemathesis stateful: {seen}")
    assert any(label.startswith("POST /api/campaigns/ 201") for label in seen)
    assert any(label.startswith("POST /api/campaigns/{campaign_id}/trials/") for label in seen)

"""One run's open, append, finish and whole-document POSTs racing each other
under gunicorn on PostgreSQL: whatever order they land in, the stored run ends
with every sample any of them carried and the terminal state, and no 2xx answer
shows less than the request sent (the runner takes a 2xx as delivered and
drops its spool copy).

Each round sends a pair or a triple of the four requests of one fresh uuid from
threads released together by a barrier; what did not land is then sent again
as the runner would (a 5xx the same request again, a finish the service has no
run for as the whole document, an append the run was not open for yet once
more). RACE_ROUNDS rounds per combination (RIGBOARD_RACE_ROUNDS overrides it)."""

from __future__ import annotations

import itertools
import os
import threading
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import pytest
import requests

from leaderboard.results.models import Run, RunStatus
from tests.fixtures.api import api_run_payload

pytestmark = pytest.mark.django_db(transaction=True)

RACE_ROUNDS = int(os.environ.get("RIGBOARD_RACE_ROUNDS", "30"))
OPERATIONS = ("open", "append", "finish", "full")
COMBINATIONS = [c for n in (2, 3) for c in itertools.combinations(OPERATIONS, n)]
TERMINAL = ("finish", "full")


@dataclass(frozen=True)
class Request:
    """One of the four requests of a run: where it goes, what it sends, and
    what it claims (its sample indexes; the status it ends the run with)."""

    operation: str
    path: str
    body: dict[str, Any]

    @property
    def indexes(self) -> set[int]:
        return {s["index"] for s in self.body.get("samples", [])}

    @property
    def ends_as(self) -> str | None:
        return self.body.get("status") if self.operation in TERMINAL else None


def run_requests(run_uuid: str) -> dict[str, Request]:
    """The runner's four requests for one run: the open (running, nothing
    measured), an append of the first two samples and the first sweep point,
    the finish with everything, and the whole finished document."""
    whole = api_run_payload(uuid=run_uuid)
    opened = {**whole, "status": "running", "finished_at": None, "samples": [], "sweep_points": []}
    appended = {"samples": whole["samples"][:2], "sweep_points": whole["sweep_points"][:1]}
    finish_keys = ("status", "failure_reason", "server_log_tail", "finished_at", "extra", "samples", "sweep_points")
    return {
        "open": Request("open", "/api/runs/", opened),
        "append": Request("append", f"/api/runs/{run_uuid}/samples/", appended),
        "finish": Request("finish", f"/api/runs/{run_uuid}/finish/", {k: whole[k] for k in finish_keys}),
        "full": Request("full", "/api/runs/", whole),
    }


@dataclass
class Answer:
    request: Request
    status_code: int
    body: dict[str, Any]


def _lie(answer: Answer) -> str:
    """Return how a 2xx ``answer`` shows less than its request sent ('' when it does not)."""
    if answer.status_code not in (200, 201):
        return ""
    request, body = answer.request, answer.body
    shown = {s["index"] for s in body.get("samples", [])}
    if not request.indexes <= shown:
        return f"{request.operation}: {answer.status_code} without samples {sorted(request.indexes - shown)}"
    if request.ends_as and body.get("status") != request.ends_as:
        return f"{request.operation}: {answer.status_code} with status {body.get('status')!r}"
    return ""


class Rig:
    """Sends requests with the rig's token, one requests.Session per thread."""

    def __init__(self, url: str, token: str) -> None:
        self.url, self.token = url, token
        self.local = threading.local()

    def send(self, request: Request) -> Answer:
        session = getattr(self.local, "session", None)
        if session is None:
            session = self.local.session = requests.Session()
            session.headers["Authorization"] = f"Token {self.token}"
        response = session.post(f"{self.url}{request.path}", json=request.body, timeout=60)
        try:
            body = response.json()
        except ValueError:
            body = {"text": response.text[:300]}
        return Answer(request, response.status_code, body if isinstance(body, dict) else {})


def _settle(rig: Rig, answer: Answer, requests_: dict[str, Request], lies: list[str]) -> None:
    """Send again, as the runner would, what ``answer`` says did not land."""
    for _ in range(5):
        code, operation = answer.status_code, answer.request.operation
        if code >= 500:
            retry = answer.request
        elif code == 404 and operation == "finish":
            retry = requests_["full"]  # LiveRun.close: no run to finish, post the whole run
        elif code == 404 and operation == "append":
            retry = answer.request
        else:
            return
        answer = rig.send(retry)
        if lie := _lie(answer):
            lies.append(f"retried {lie}")


def _round(rig: Rig, pool: ThreadPoolExecutor, combination: tuple[str, ...]) -> list[str]:
    """Race ``combination`` for a fresh uuid; return every lie and wrong outcome seen."""
    run_uuid = str(uuid.uuid4())
    requests_ = run_requests(run_uuid)
    barrier = threading.Barrier(len(combination))

    def racing(request: Request) -> Callable[[], Answer]:
        def go() -> Answer:
            barrier.wait(timeout=30)
            return rig.send(request)

        return go

    answers = [f.result() for f in [pool.submit(racing(requests_[op])) for op in combination]]
    problems = [f"{combination} {lie}" for a in answers if (lie := _lie(a))]
    problems += [
        f"{combination} {a.request.operation}: {a.status_code} {a.body}" for a in answers if a.status_code >= 500
    ]
    for answer in answers:
        _settle(rig, answer, requests_, problems)

    # Every sample any request carried (the finish and the whole run carry them all).
    carried = set().union(*(requests_[op].indexes for op in combination))
    if any(op in TERMINAL for op in combination):
        carried |= requests_["full"].indexes
    run = Run.objects.filter(uuid=run_uuid).first()
    expected = RunStatus.FINISHED if any(op in TERMINAL for op in combination) else RunStatus.RUNNING
    if run is None:
        return [*problems, f"{combination}: no run stored"]
    stored = list(run.samples.values_list("index", flat=True))
    if sorted(stored) != sorted(carried) or run.status != expected:
        problems.append(
            f"{combination}: stored {run.status} with samples {sorted(stored)}, expected {expected} {sorted(carried)}"
        )
    return problems


def test_racing_requests_of_one_run_lose_nothing_and_no_answer_overstates(gunicorn_service, rig_with_token):
    url = gunicorn_service(workers=2, threads=4, RIGBOARD_THROTTLE_RIG_WRITES="off", LOG_LEVEL="ERROR")
    rig = Rig(url, rig_with_token.raw)
    problems: list[str] = []
    with ThreadPoolExecutor(max_workers=3) as pool:
        for combination in COMBINATIONS:
            for _ in range(RACE_ROUNDS):
                problems += _round(rig, pool, combination)

    assert problems == [], f"{len(problems)} problems, first: {problems[:5]}"
    assert Run.objects.count() == len(COMBINATIONS) * RACE_ROUNDS

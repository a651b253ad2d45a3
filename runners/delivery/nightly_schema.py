"""The nightly build's two messages, rig ↔ service: their one definition.

The service sends a ``NightlyDispatch`` to the rig's queue
(leaderboard/regressions/services/detection.py ``build_dispatch_spec``): what
to build and one runner config per run, each under the run uuid and role the
service assigned. The rig (runners/builds/nightly.py) reads it with the same
model and answers with a ``BuildReport``, which the service checks against it
before storing anything (leaderboard/regressions/services/builds.py). A failed
run carries the rig's own ``failure_kind`` (runners.harness.server.ServerError's
``kind``), so the service never re-reads failure text to guess why.

Django-free, like schema.py: the rig side imports no Django. The enum lists
mirror the service's choices (leaderboard/regressions/states.py), checked by
tests/regressions/test_nightly_schema.py."""

from __future__ import annotations

from typing import Annotated, Any, Literal, get_args

from pydantic import BeforeValidator, Field

from runners.delivery.schema import END_STATUSES, EndStatusName, Payload
from runners.delivery.schema_types import Boolean, FilledText, JSONObject, Number, Text, Whole, one_of

# What the rig says of the build itself: built, the build failed (its log says
# why), or an error that is not the build's fault (a fetch, a full disk).
BuildOutcomeName = Literal["built", "failed", "error"]
BUILD_OUTCOMES: tuple[str, ...] = get_args(BuildOutcomeName)
# states.BuildRunRole, by value: what each dispatched run is for.
RunRoleName = Literal["judged", "noise", "rerun", "ab_a", "ab_b", "midpoint"]
RUN_ROLES: tuple[str, ...] = get_args(RunRoleName)
MAX_FAILURE_KIND_CHARS = 32
MAX_SUBJECT_CHARS = 300


class DispatchBuild(Payload):
    """The commit to build, with what flags and how many compile jobs."""

    id: Whole
    repo_url: FilledText
    commit: FilledText = Field(max_length=40)
    flags: Text = ""
    jobs: Whole = Field(default=2, ge=1)


class DispatchRun(Payload):
    """One run to make: a reference config's runner config, the uuid to post it
    under, and ``commit`` when it runs another build's binary (the A side of an A/B pair)."""

    build_run_id: Whole
    run_uuid: FilledText
    role: Annotated[RunRoleName, BeforeValidator(one_of(RUN_ROLES))] = "judged"
    name: Text = ""
    config: JSONObject = Field(default_factory=dict)
    commit: Text | None = Field(default=None, max_length=40)


class NightlyDispatch(Payload):
    """What the rig's nightly task receives. No secrets: the rig has its own token."""

    build: DispatchBuild
    runs: list[DispatchRun] = Field(default_factory=list)
    rig: Text = ""
    service_url: Text = ""
    report_task: FilledText = "regressions.build_report"
    report_queue: FilledText = "celery"

    def as_message(self) -> dict[str, Any]:
        """Return the spec as the JSON the service sends (a run's ``commit`` only where it names one)."""
        return self.model_dump(mode="json", exclude_none=True)


class BuiltFields(Payload):
    """runners/builds/build.py's BuildResult, as far as the service keeps it."""

    commit: Text = ""
    status: Text = ""
    build_time_s: Number | None = None
    compiler: Text = ""
    log_tail: Text = ""
    binary_path: Text = ""
    flags: list[str] = Field(default_factory=list)
    cached: Boolean = False
    subject: Text = ""


class RunReport(Payload):
    """How one dispatched run ended and whether it reached the service."""

    build_run_id: Whole
    run_uuid: Text = ""
    status: Annotated[EndStatusName, BeforeValidator(one_of(END_STATUSES))]
    delivered: Text = ""
    error: Text = ""
    failure_kind: Text = Field(default="", max_length=MAX_FAILURE_KIND_CHARS)


class BuildReport(Payload):
    """What the rig sends back after a nightly job."""

    build_id: Whole
    status: Annotated[BuildOutcomeName, BeforeValidator(one_of(BUILD_OUTCOMES))]
    error: Text = ""
    build: BuiltFields = Field(default_factory=BuiltFields)
    runs: list[RunReport] = Field(default_factory=list)

    def as_message(self) -> dict[str, Any]:
        """Return the report as the JSON the rig sends by task name."""
        return self.model_dump(mode="json")

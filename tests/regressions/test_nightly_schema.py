"""The nightly messages' one schema (runners/delivery/nightly_schema.py): its
enum lists are the service's choices, a report that does not fit is refused
naming the field with nothing stored, and the failure kind the rig names
(ServerError.kind) is what the service stores, unparsed."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from leaderboard.core.errors import ApplicationError
from leaderboard.regressions.models import BuildRecord, BuildRun
from leaderboard.regressions.services.builds import build_report_record
from leaderboard.regressions.services.detection import build_dispatch_spec
from leaderboard.regressions.states import BuildRunRole, BuildRunStatus, BuildStatus
from runners.builds import nightly
from runners.builds.build import BuildResult, BuildSpec
from runners.celery_app import RigEnv
from runners.delivery import nightly_schema
from runners.delivery.schema import END_STATUSES
from runners.harness.server import ServerError

ENV = RigEnv("redis://x", "http://svc", "tok", "rig-1", "", 3600, 60)


def test_the_schemas_enum_lists_are_the_services_choices() -> None:
    assert set(nightly_schema.RUN_ROLES) == set(BuildRunRole.values)
    assert set(END_STATUSES) == set(BuildRunStatus.values) - {BuildRunStatus.QUEUED}
    assert BuildRun._meta.get_field("failure_kind").max_length == nightly_schema.MAX_FAILURE_KIND_CHARS
    assert set(nightly_schema.BUILD_OUTCOMES) == {"built", "failed", "error"}


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"status": "exploded"}, "status"),
        ({"build_id": "seven"}, "build_id"),
        ({"runs": [{"build_run_id": 1, "status": "queued"}]}, "runs.0.status"),
        ({"build": {"build_time_s": "fast"}}, "build.build_time_s"),
    ],
)
def test_a_report_that_does_not_fit_is_refused_naming_the_field_and_nothing_is_stored(
    nightly_setup: Callable[..., Any], change: dict[str, Any], field: str
) -> None:
    _, _, make_build = nightly_setup()
    build = make_build("a", [100.0] * 5)
    report = {"build_id": build.pk, "status": "built", "build": {"compiler": "cc"}, "runs": [], **change}

    with pytest.raises(ApplicationError) as refused:
        build_report_record(report=report)

    assert refused.value.field == field
    stored = BuildRecord.objects.get(pk=build.pk)
    assert (stored.status, stored.compiler) == (BuildStatus.QUEUED, "")


@pytest.mark.django_db(transaction=True)
def test_the_failure_kind_the_rig_names_is_stored_with_the_run(
    nightly_setup: Callable[..., Any], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _, _, make_build = nightly_setup()
    build = make_build("a", [], status="failed")  # its run never arrives
    spec = build_dispatch_spec(build=build)
    assert [r["role"] for r in spec["runs"]] == ["judged"]

    def fake_build(build_spec: BuildSpec, cache_dir: Path) -> BuildResult:
        return BuildResult(build_spec.commit, "built", 1.0, "cc", "", "/cache/llama-server")

    def run_job(config: Mapping[str, Any]) -> Any:
        raise ServerError("out of memory while loading: cudaMalloc failed", kind="out_of_memory")

    monkeypatch.setattr(nightly, "build", fake_build)
    report = nightly.nightly_build_and_bench(spec, env=ENV, cache_dir=tmp_path, run_job=run_job)
    assert report["runs"][0]["failure_kind"] == "out_of_memory"

    build_report_record(report=report)

    (build_run,) = BuildRun.objects.filter(build=build)
    assert (build_run.status, build_run.failure_kind) == (BuildRunStatus.FAILED, "out_of_memory")
    assert build_run.error == "out of memory while loading: cudaMalloc failed"

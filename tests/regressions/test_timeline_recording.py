"""A timeline recorded on one database and stored on another
(regressions/timeline_export.py → services/imports.py): the service judges
the recording again and asks for the same A/B confirmation, which the import
fills from the recording, batch after batch, sending nothing to a rig. The
runs are stored through the real run-document intake, as the rig's worker
posted them and kept their copies (RIGBOARD_RUNS_DIR)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import redis
from django.core.management import call_command

from leaderboard.core.errors import ApplicationError
from leaderboard.regressions.models import BuildRecord, BuildRun, ConfirmationPair, Subscription, Verdict
from leaderboard.regressions.services.builds import build_report_record
from leaderboard.regressions.services.confirmation import blocks_report_receive
from leaderboard.regressions.services.imports import timeline_import
from leaderboard.regressions.timeline_export import timeline_document
from leaderboard.results.imports import run_document_store
from leaderboard.results.models import Run
from runners.ab_design import rep_order
from tests.fixtures.celery_worker import queued_messages

pytestmark = pytest.mark.django_db(transaction=True)


def _post(build_run: BuildRun, samples: list[float], runs_dir: Path, commit: str) -> None:
    """Post a run document as the rig does, and keep its copy as the rig's worker does."""
    document = {
        "uuid": str(build_run.run_uuid),
        "status": "finished",
        "stack": {"engine": "llama.cpp", "build": commit},
        "model_file": {"name": "gemma-3-270m", "quantization": "Q4_K_M", "weight_format": "GGUF"},
        "configuration": {
            "ctx_size": 2048,
            "threads": 1,
            "command_line": "/root/.cache/b/llama-server -m /root/m/gemma.gguf --port 41234",
        },
        "workload": {"name": "decode-64", "version": "1", "max_tokens": 64, "repetitions": len(samples)},
        "samples": [
            {"index": i, "decode_tokens_per_s_server": v, "tokens_generated": 64}
            for i, v in enumerate(samples, start=1)
        ],
    }
    run_document_store(rig=build_run.build.subscription.rig, document=document)
    (runs_dir / f"{build_run.run_uuid}.json").write_text(json.dumps(document))


def _report(build: BuildRecord, build_runs: list[BuildRun]) -> dict[str, Any]:
    return {
        "build_id": build.pk,
        "status": "built",
        "bench_time_s": 30.0,
        "build": {
            "build_time_s": 60.0,
            "compiler": "cc",
            "binary_path": "/root/.cache/b/llama-server",
            "log_tail": "$ cmake --build /root/.cache/b/sdist/build -j 2",
        },
        "runs": [{"build_run_id": br.pk, "run_uuid": str(br.run_uuid), "status": "finished"} for br in build_runs],
    }


def _night(sub: Subscription, commit: str, samples: list[float], runs_dir: Path) -> BuildRecord:
    previous = BuildRecord.objects.filter(subscription=sub).order_by("-created_at", "-id").first()
    build = BuildRecord.objects.create(
        subscription=sub, commit=commit, previous_commit=previous.commit if previous else ""
    )
    build_run = BuildRun.objects.create(
        build=build, reference_config=sub.reference_configs.get(), run_uuid=uuid.uuid4()
    )
    _post(build_run, samples, runs_dir, commit)
    build_report_record(report=_report(build, [build_run]))
    return build


def _answer_pairs(build: BuildRecord, ratio: float, runs_dir: Path) -> None:
    """Post the pairs the service asked for, B at ``ratio`` × A (a little noise), and report them."""
    pairs = list(ConfirmationPair.objects.filter(build=build, a_median__isnull=True).order_by("index"))
    for i, pair in enumerate(pairs):
        a = [100.0 + 0.2 * ((i + j) % 3) for j in range(6)]
        _post(pair.a_run, a, runs_dir, pair.a_commit)
        _post(pair.b_run, [v * (ratio + 0.001 * (i % 2)) for v in a], runs_dir, build.commit)
    build_report_record(report=_report(build, [r for p in pairs for r in (p.a_run, p.b_run)]))


@dataclass(frozen=True)
class Recorded:
    subscription: Subscription
    runs_dir: Path
    verdicts: list[tuple[str, str, str, int | None]]


@pytest.fixture
def recorded(nightly_setup: Callable[..., Any], celery_broker: redis.Redis, tmp_path: Path) -> Recorded:
    """A releases timeline judged with A/B pairs: b100, then b101 and b102 5% slower
    (each confirmed by its pairs), with the rig's copies of its run documents."""
    sub, _, _ = nightly_setup(confirm_mode="ab", follows="releases", release_source="sdist", confirm_runs=1)
    runs_dir = tmp_path / "runs"
    runs_dir.mkdir()
    for commit, ratio in (("b100", 1.0), ("b101", 0.95), ("b102", 0.95)):
        build = _night(sub, commit, [v * ratio for v in (100.0, 100.5, 99.5, 100.2, 99.8, 100.1)], runs_dir)
        for _ in range(5):  # the rule's batches, each answered as the rig would
            if not build.build_runs.filter(status="queued").exists():
                break
            _answer_pairs(build, ratio, runs_dir)
    return Recorded(sub, runs_dir, _verdicts(sub))


def _exported(recorded: Recorded) -> dict[str, Any]:
    """Return the recording, and leave the database as another one would be: nothing
    of the recording's rig, builds or runs."""
    document = timeline_document(recorded.subscription, runs_dir=recorded.runs_dir, recorded_on="the test machine")
    Run.objects.filter(uuid__in=[d["uuid"] for d in document["runs"]]).delete()
    recorded.subscription.rig.delete()
    return document


def _verdicts(sub: Subscription) -> list[tuple[str, str, str, int | None]]:
    return [
        (v.build.commit, v.kind, v.confirmation, v.ab_n_pairs)
        for v in Verdict.objects.filter(build__subscription=sub).select_related("build").order_by("build__created_at")
    ]


def test_an_ab_confirmed_timeline_is_judged_again_and_confirmed_the_same_where_it_is_imported(
    recorded: Recorded, make_rig: Callable[..., Any], celery_broker: redis.Redis
) -> None:
    judged = recorded.verdicts
    assert ("b101", "regression", "ab_confirmed", 4) in judged
    document = _exported(recorded)
    # No path of the recording machine travels.
    assert "/root/" not in json.dumps(document) and "41234" not in json.dumps(document)

    imported = timeline_import(rig=make_rig(name="imported-rig"), document=document)

    sub = imported.subscription
    assert (sub.follows, sub.release_source, sub.confirm_mode, sub.is_active) == ("releases", "sdist", "ab", False)
    assert (imported.builds_created, imported.runs_created) == (3, len(document["runs"]))
    assert _verdicts(sub) == judged
    recorded_kinds = [
        (n["commit"], v["kind"], v["confirmation"]) for n in document["builds"] for v in n["verdicts_recorded"]
    ]
    assert recorded_kinds == [(commit, kind, confirmation) for commit, kind, confirmation, _ in judged]
    slow = sub.builds.get(commit="b101")
    assert slow.status == "benchmarked" and not slow.build_runs.filter(status="queued").exists()
    # Every round's benchmark time, as the rig reported them: the first report and each batch of pairs.
    assert slow.bench_time_s == pytest.approx(30.0 * (1 + ConfirmationPair.objects.filter(build=slow).count() // 4))
    # Nothing was sent to a rig: the confirmation came from the recording.
    assert not queued_messages(celery_broker, sub.rig.queue_name)
    # Importing again stores nothing twice.
    again = timeline_import(rig=sub.rig, document=document)
    assert (again.builds_created, again.runs_created) == (0, 0)


def test_a_recording_that_ends_before_its_confirmation_does_is_refused_and_its_night_not_stored(
    recorded: Recorded, make_rig: Callable[..., Any]
) -> None:
    document = _exported(recorded)
    slow = next(night for night in document["builds"] if night["commit"] == "b101")
    slow["build_runs"] = [e for e in slow["build_runs"] if e["role"] != "ab_b"]

    with pytest.raises(ApplicationError) as refused:
        timeline_import(rig=make_rig(name="imported-rig"), document=document)

    assert refused.value.field == "builds.1.build_runs"
    assert not BuildRecord.objects.filter(commit="b101").exists()


def test_export_nightly_writes_the_recording_import_nightly_stores(
    recorded: Recorded, make_rig: Callable[..., Any], tmp_path: Path
) -> None:
    path = tmp_path / "timeline.json"
    sub = recorded.subscription
    call_command(
        "export_nightly", "--subscription", str(sub.pk), "--runs-dir", str(recorded.runs_dir), "--out", str(path)
    )
    document = json.loads(path.read_text())
    Run.objects.filter(uuid__in=[d["uuid"] for d in document["runs"]]).delete()
    sub.rig.delete()
    make_rig(name="imported-rig")

    call_command("import_nightly", "--rig", "imported-rig", str(path))

    assert _verdicts(Subscription.objects.get(rig__name="imported-rig")) == recorded.verdicts


def _block(index: int, ratio: float, contention: str = "quiet") -> dict[str, Any]:
    order = rep_order(index, 4)
    wiggle = [1.0, 1.004, 0.997, 1.002, 0.999][index % 5]
    values = [100.0 * (ratio * wiggle if s.value == "b" else 1.0) for s in order]
    return {"index": index, "sides": [s.value for s in order], "decode_tokens_per_s": values,
            "contention": contention, "error": ""}  # fmt: skip


def test_a_timeline_confirmed_by_ab_blocks_imports_to_the_same_answer(
    nightly_setup: Callable[..., Any], celery_broker: redis.Redis, make_rig: Callable[..., Any], tmp_path: Path
) -> None:
    sub, _, _ = nightly_setup(confirm_mode="blocks")
    runs_dir = tmp_path / "runs"
    runs_dir.mkdir()
    samples = [100.0, 100.5, 99.5, 100.2, 99.8, 100.1]
    _night(sub, "a" * 40, samples, runs_dir)
    slow = _night(sub, "b" * 40, [v * 0.95 for v in samples], runs_dir)
    verdict = slow.verdicts.get()
    assert verdict.confirmation == "pending"
    # Two batches as the rig answered them, a heavy block (not judged) in the first.
    ident = f"vb-{verdict.pk}"
    first = [_block(0, 0.95), _block(1, 1.0, "heavy"), _block(2, 0.95)]
    blocks_report_receive(report={"confirmation_id": ident, "status": "measured", "design": "interleaved",
                                  "blocks": first})  # fmt: skip
    blocks_report_receive(report={"confirmation_id": ident, "status": "measured", "design": "interleaved",
                                  "blocks": [_block(3, 0.95), _block(4, 0.95)]})  # fmt: skip
    judged = _verdicts(sub)
    assert judged[-1] == ("b" * 40, "regression", "ab_confirmed", 4)
    verdict.refresh_from_db()
    effect = verdict.ab_effect_pct
    document = _exported(Recorded(sub, runs_dir, judged))
    assert [len(b["blocks"]) for n in document["builds"] for b in n["ab_blocks"]] == [5]

    imported = timeline_import(rig=make_rig(name="imported-rig"), document=document)

    assert imported.subscription.confirm_mode == "blocks"
    assert _verdicts(imported.subscription) == judged
    again = Verdict.objects.get(build__subscription=imported.subscription, build__commit="b" * 40)
    assert again.ab_effect_pct == pytest.approx(effect) and again.ab_design == "interleaved"
    assert len(again.ab_blocks) == 5
    # A recording that ends before the service's confirmation does is refused, naming the field.
    Run.objects.filter(uuid__in=[d["uuid"] for d in document["runs"]]).delete()
    imported.subscription.rig.delete()
    document["builds"][1]["ab_blocks"][0]["blocks"] = first[:1]
    with pytest.raises(ApplicationError) as refused:
        timeline_import(rig=make_rig(name="short-rig"), document=document)
    assert refused.value.field.endswith("ab_blocks")

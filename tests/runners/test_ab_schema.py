"""The A/B task's messages (runners/delivery/ab_schema.py): what the rig's block
record writes is what the schema reads, and a message that does not fit is
refused naming the field."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from runners.ab_design import AbDesign, DesignChoice, Side
from runners.builds.ab_block import BlockRecord, ConfirmationRecord
from runners.builds.ab_task import ab_blocks_run
from runners.delivery.ab_schema import AbDispatch, AbReport
from runners.delivery.schema_types import field_errors
from runners.harness.contention import ContentionReading


def _record() -> ConfirmationRecord:
    quiet_a, quiet_b = ContentionReading(0.2, 0.01, 0.02), ContentionReading(0.2, 0.0, 0.0)
    block = BlockRecord(
        index=0, sides=[Side.A, Side.B], samples=[80.0, None], contention_a=quiet_a, contention_b=quiet_b
    )
    return ConfirmationRecord(DesignChoice(AbDesign.INTERLEAVED, 1, 2, "fits"), [block])


def test_the_rigs_record_is_a_valid_report() -> None:
    report = AbReport.model_validate({"confirmation_id": "aa-1", "status": "measured", **_record().as_dict()})
    (block,) = report.blocks
    assert block.sides == ["a", "b"] and block.decode_tokens_per_s == [80.0, None]
    assert block.contention == "quiet" and report.design == "interleaved"


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"status": "done"}, "status"),
        ({"design": "abab"}, "design"),
        ({"blocks": [{"index": 0, "sides": ["a", "c"], "decode_tokens_per_s": [1.0, 2.0]}]}, "blocks.0.sides.1"),
        ({"blocks": [{"index": 0, "sides": ["a"], "decode_tokens_per_s": [1.0, 2.0]}]}, "blocks.0"),
        ({"blocks": [{"index": 0, "contention": "mild"}]}, "blocks.0.contention"),
    ],
)
def test_a_report_that_does_not_fit_is_refused_naming_the_field(change: dict[str, Any], field: str) -> None:
    with pytest.raises(ValidationError) as exc:
        AbReport.model_validate({"confirmation_id": "aa-1", "status": "measured", **change})
    assert field in field_errors(exc.value)


def test_a_spec_that_does_not_fit_comes_back_as_an_error_report() -> None:
    report = ab_blocks_run({"confirmation_id": "aa-9", "a_commit": "x", "b_commit": "x", "count": 0})
    assert report["status"] == "error" and "count" in report["error"]
    assert AbDispatch(confirmation_id="aa-1", a_commit="a", b_commit="a").reps_per_side == 12

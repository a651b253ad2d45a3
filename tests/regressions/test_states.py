"""The chain's stored states: every move the tables allow is made, every other
is refused (states.py), and restating a state is accepted as no move. The
oracle is the list of moves written out here from the chain's description
(report → judge → confirm → benchmarked again), not the tables read back."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from leaderboard.core.errors import ApplicationError
from leaderboard.regressions.states import (
    BuildRunStatus,
    BuildStatus,
    Confirmation,
    build_move,
    build_run_move,
    confirmation_move,
)

B, R, C = BuildStatus, BuildRunStatus, Confirmation
BUILD_MOVES = {
    (B.QUEUED, B.BENCHMARKED), (B.QUEUED, B.FAILED), (B.QUEUED, B.ERROR),  # the rig's first report
    (B.ERROR, B.BENCHMARKED), (B.ERROR, B.FAILED),  # a retried task's report after an error
    (B.BENCHMARKED, B.RERUNNING), (B.BENCHMARKED, B.AB_PAIRS),  # a change held for confirmation
    (B.RERUNNING, B.BENCHMARKED), (B.AB_PAIRS, B.BENCHMARKED),  # every verdict answered
}  # fmt: skip
RUN_MOVES = {(R.QUEUED, R.FINISHED), (R.QUEUED, R.FAILED), (R.QUEUED, R.ABORTED)}
CONFIRMATION_MOVES = {(C.NOT_ASKED, C.PENDING)} | {
    (C.PENDING, answer) for answer in (C.CONFIRMED, C.REFUTED, C.UNCHECKED, C.AB_CONFIRMED, C.AB_REFUTED, C.AB_FOUND)
}


@dataclass
class Row:
    """Stands in for a model instance: the move functions set one attribute and never save."""

    pk: int
    status: str = ""
    confirmation: str = ""


CASES: list[tuple[Any, str, Callable[[Any, Any], None], set[tuple[Any, Any]]]] = [
    (BuildStatus, "status", build_move, BUILD_MOVES),
    (BuildRunStatus, "status", build_run_move, RUN_MOVES),
    (Confirmation, "confirmation", confirmation_move, CONFIRMATION_MOVES),
]


@pytest.mark.parametrize(("states", "field", "move", "allowed"), CASES, ids=["build", "build_run", "confirmation"])
def test_every_allowed_move_is_made_and_every_other_is_refused(
    states: Any, field: str, move: Callable[[Any, Any], None], allowed: set[tuple[Any, Any]]
) -> None:
    made, refused = set(), set()
    for current, to in itertools.product(list(states), repeat=2):
        row = Row(pk=1, **{field: current.value})
        try:
            move(row, to)
        except ApplicationError as exc:
            assert exc.field == field and getattr(row, field) == current  # refused: nothing changed
            refused.add((current, to))
        else:
            assert getattr(row, field) == to
            made.add((current, to))
    restated = {(s, s) for s in states}
    assert made == allowed | restated
    assert refused == set(itertools.product(list(states), repeat=2)) - allowed - restated
    assert refused  # the check can fail: some moves are refused


def test_a_refusal_says_what_the_row_is_and_what_it_cannot_become() -> None:
    with pytest.raises(ApplicationError) as caught:
        confirmation_move(Row(pk=7, confirmation=C.CONFIRMED), C.PENDING)
    assert caught.value.message == "Row 7 is confirmed; cannot become pending"
    with pytest.raises(ApplicationError) as caught:
        confirmation_move(Row(pk=7), C.CONFIRMED)
    assert caught.value.message == "Row 7 is not asked; cannot become confirmed"

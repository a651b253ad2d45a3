"""The stored states of the nightly chain, and the only moves between them.

Three lifecycles, each a ``TextChoices`` whose allowed moves are one table,
made by one function that refuses every other move (as jobs/services.py's
``_ALLOWED``). What happens next can be read from the state alone:

- a build's phase (``BuildRecord.status``)::

      queued ──report──▶ failed | error | benchmarked
      error ──a retried task's report──▶ failed | benchmarked
      benchmarked ──a change to confirm──▶ rerunning | ab_pairs
      rerunning ──re-runs judged──▶ benchmarked
      ab_pairs ──pairs judged──▶ benchmarked   (another batch: stays ab_pairs)

- a build run's status (``BuildRun.status``): queued ──the rig's report──▶
  finished | failed | aborted;
- a verdict's confirmation (``Verdict.confirmation``): not asked ──a change
  held back──▶ pending ──▶ confirmed | refuted | unchecked (re-run) or
  ab_confirmed | ab_refuted | unchecked (A/B pairs). Where every step is
  screened by A/B blocks (``Subscription.screen_every_step``) a step the first
  run calls no change is held too, and its blocks may answer ab_found: a change
  the first run did not see, which then stands.

- an A/A check's status (``AaCheck.status``, models_aa.py): queued ──the rig's
  reports──▶ settled | held_back | failed (another batch: stays queued).

A build run's role (``BuildRunRole``) is set when it is made and never moves.
A verdict's kind, a bisection's status and an alert's status are kept here
too, beside the states they go with.

Restating the current state is no move and is accepted: a report sent twice
says again what the first said."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.db import models

from leaderboard.core.errors import ApplicationError


class BuildStatus(models.TextChoices):
    """A build's phase: its own outcome, then whether it waits on a confirmation."""

    QUEUED = "queued", "Queued"
    FAILED = "failed", "Build failed"
    ERROR = "error", "Error (not the build's fault)"
    BENCHMARKED = "benchmarked", "Benchmarked"
    RERUNNING = "rerunning", "Benchmarked; re-running a change"
    AB_PAIRS = "ab_pairs", "Benchmarked; confirming by A/B"


# The phases in which the rig still owes the build runs of a confirmation.
CONFIRMING = frozenset({BuildStatus.RERUNNING, BuildStatus.AB_PAIRS})
# The phases of a build that built and whose first runs were reported.
BENCHMARKED_PHASES = frozenset({BuildStatus.BENCHMARKED, *CONFIRMING})


class BuildRunRole(models.TextChoices):
    """What a build run is for, fixed when it is made."""

    JUDGED = "judged", "The nightly run judged"
    NOISE = "noise", "A repeat measuring run-to-run noise"
    RERUN = "rerun", "A re-run confirming a change"
    AB_A = "ab_a", "A/B pair: the baseline build (A)"
    AB_B = "ab_b", "A/B pair: the candidate build (B)"
    MIDPOINT = "midpoint", "A bisection midpoint's run"


# The roles of a confirmation's runs (re-runs and both sides of A/B pairs).
CONFIRMATION_ROLES = frozenset({BuildRunRole.RERUN, BuildRunRole.AB_A, BuildRunRole.AB_B})


class BuildRunStatus(models.TextChoices):
    """Whether the rig has reported a build run, and how it ended."""

    QUEUED = "queued", "Awaiting the rig"
    FINISHED = "finished", "Finished"
    FAILED = "failed", "Failed"
    ABORTED = "aborted", "Aborted"


class Confirmation(models.TextChoices):
    """Where a verdict stands with its confirmation (not asked: no change, or
    the subscription confirms nothing)."""

    NOT_ASKED = "", "Not asked"
    PENDING = "pending", "Awaiting a re-run"
    CONFIRMED = "confirmed", "Reproduced by a re-run"
    REFUTED = "refuted", "Not reproduced by a re-run"
    UNCHECKED = "unchecked", "Re-run failed; the first run stands"
    AB_CONFIRMED = "ab_confirmed", "Reproduced by A/B"
    AB_REFUTED = "ab_refuted", "Not reproduced by A/B"
    AB_FOUND = "ab_found", "Found by A/B"


# A change under one of these does not stand (not yet, or not reproduced): Verdict.stands.
NOT_STANDING = frozenset({Confirmation.PENDING, Confirmation.REFUTED, Confirmation.AB_REFUTED})


class VerdictKind(models.TextChoices):
    REGRESSION = "regression", "Regression"
    IMPROVEMENT = "improvement", "Improvement"
    NONE = "none", "No change"


class BisectStatus(models.TextChoices):
    RUNNING = "running", "Bisecting"
    DONE = "done", "First slow commit found"
    FAILED = "failed", "Bisection stopped"


class AaStatus(models.TextChoices):
    """An A/A check's state (models_aa.py): queued while its batches run on the rig."""

    QUEUED = "queued", "Queued on the rig"
    HELD_BACK = "held_back", "Held back by contention"
    SETTLED = "settled", "Settled"
    FAILED = "failed", "Failed"


class AlertStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    SENT = "sent", "Sent"
    FAILED = "failed", "Failed (gave up)"


BUILD_MOVES: Mapping[str, frozenset[str]] = {
    BuildStatus.QUEUED: frozenset({BuildStatus.FAILED, BuildStatus.ERROR, BuildStatus.BENCHMARKED}),
    BuildStatus.ERROR: frozenset({BuildStatus.FAILED, BuildStatus.BENCHMARKED}),
    BuildStatus.BENCHMARKED: CONFIRMING,
    BuildStatus.RERUNNING: frozenset({BuildStatus.BENCHMARKED}),
    BuildStatus.AB_PAIRS: frozenset({BuildStatus.BENCHMARKED}),
}
BUILD_RUN_MOVES: Mapping[str, frozenset[str]] = {
    BuildRunStatus.QUEUED: frozenset({BuildRunStatus.FINISHED, BuildRunStatus.FAILED, BuildRunStatus.ABORTED}),
}
CONFIRMATION_MOVES: Mapping[str, frozenset[str]] = {
    Confirmation.NOT_ASKED: frozenset({Confirmation.PENDING}),
    Confirmation.PENDING: frozenset(
        {
            Confirmation.CONFIRMED,
            Confirmation.REFUTED,
            Confirmation.UNCHECKED,
            Confirmation.AB_CONFIRMED,
            Confirmation.AB_REFUTED,
            Confirmation.AB_FOUND,
        }
    ),
}

AA_MOVES: Mapping[str, frozenset[str]] = {
    AaStatus.QUEUED: frozenset({AaStatus.HELD_BACK, AaStatus.SETTLED, AaStatus.FAILED}),
}


def move_allowed(table: Mapping[str, frozenset[str]], current: str, to: str) -> bool:
    """Return True if ``table`` lets ``current`` become ``to`` (restating ``current`` included)."""
    return to == current or to in table.get(current, frozenset())


def _move(obj: Any, field: str, table: Mapping[str, frozenset[str]], to: str) -> None:
    current = getattr(obj, field)
    if not move_allowed(table, current, to):
        what = type(obj).__name__
        raise ApplicationError(f"{what} {obj.pk} is {current or 'not asked'}; cannot become {to}", field=field)
    setattr(obj, field, to)


def build_move(build: Any, to: BuildStatus) -> None:
    """Set ``build``'s phase to ``to`` (not saved); raise ApplicationError
    (field ``status``) for a move BUILD_MOVES does not allow."""
    _move(build, "status", BUILD_MOVES, to)


def build_run_move(build_run: Any, to: BuildRunStatus) -> None:
    """Set ``build_run``'s status to ``to`` (not saved); raise ApplicationError
    (field ``status``) for a move BUILD_RUN_MOVES does not allow."""
    _move(build_run, "status", BUILD_RUN_MOVES, to)


def confirmation_move(verdict: Any, to: Confirmation) -> None:
    """Set ``verdict``'s confirmation to ``to`` (not saved); raise
    ApplicationError (field ``confirmation``) for a move CONFIRMATION_MOVES
    does not allow."""
    _move(verdict, "confirmation", CONFIRMATION_MOVES, to)


def aa_check_move(check: Any, to: AaStatus) -> None:
    """Set ``check``'s status to ``to`` (not saved); raise ApplicationError
    (field ``status``) for a move AA_MOVES does not allow."""
    _move(check, "status", AA_MOVES, to)

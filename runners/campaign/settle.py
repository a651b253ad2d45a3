"""A campaign trial settled from its run and how its measuring ended: the one rule
the rig's CLI (trial.py) and the service (leaderboard.campaigns.dispatch) both
store by, so a trial of the same run stores the same whichever side ran it.

Pure: it reads the run document (what the rig posted, or the service's stored run
read back in the same keys: ``samples``, ``extra``, ``server_log_tail``,
``failure_reason``) and a ``TrialEnd``; each side keeps its own clock
(``duration_s``) and its own links (the run, the job).

The failure kind is the rig's own word where it has one (a ServerError's kind,
``bad_config``, ``time_limit``: sent in the job's report), never re-read from the
failure's text; else it follows from how the run or job ended."""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from runners.campaign.figures import trial_figures
from runners.campaign.hooks import trial_extra, trial_quality
from runners.campaign.spec import CampaignSpec
from runners.campaign.states import TrialRole, TrialState
from runners.delivery.status_schema import FailureKind

# A trial's log tail: the trial record's bound (search.TrialResult.payload()).
MAX_LOG_TAIL_CHARS = 8000
# The kind of a failure nobody named, by how the run (or its job) ended.
_KIND_BY_STATUS = {"aborted": FailureKind.ABORTED, "expired": FailureKind.EXPIRED}


@dataclass(frozen=True)
class TrialEnd:
    """How a trial's measuring ended, in the words both sides have.

    ``status``: how its run ended (finished, failed, aborted), or on the service its
    job (expired too); ``failure_kind``: the rig's word for a failure it could name
    ('' when none); ``failure_reason``: why, in words; ``log_tail``: the server's log
    tail when no run holds one (a server that never started)."""

    status: str
    failure_kind: str = ""
    failure_reason: str = ""
    log_tail: str = ""


@dataclass
class SettledTrial:
    """A trial's stored fields, as settled: ``value`` is the objective (None unless
    complete), ``samples`` the objective per repetition, ``repetitions`` every
    per-repetition metric (runners.campaign.figures)."""

    state: TrialState
    value: float | None = None
    pruned: bool = False
    failure_kind: str = ""
    failure_reason: str = ""
    log_tail: str = ""
    metrics: dict[str, Any] = field(default_factory=dict)
    repetitions: dict[str, list[float]] = field(default_factory=dict)
    samples: list[float] = field(default_factory=list)
    measured_s: float | None = None


def trial_model(params: Mapping[str, Any], base: Mapping[str, Any]) -> str:
    """Return the model file a trial of ``params`` over the rig config ``base`` loads."""
    return str(params.get("model") or (base.get("server") or {}).get("model") or "")


def trial_settle(
    spec: CampaignSpec,
    *,
    base: Mapping[str, Any],
    params: Mapping[str, Any],
    role: str,
    run: Mapping[str, Any] | None,
    end: TrialEnd,
) -> SettledTrial:
    """Return the trial of ``params`` (its ``role``) whose run is ``run`` (None when
    none was made or has arrived) and whose measuring ended as ``end``.

    In order: a run the rig's user interrupted is aborted (``interrupted``); a search
    trial the rig pruned is complete, pruned, valued at its repetitions' mean; a run
    (or job) that did not finish, or no run, is failed (aborted when it was aborted)
    with ``end``'s kind, else the kind its status names; a finished run without the
    objective is failed (``no_measurement``); else it is complete, or infeasible when
    it breaks a constraint."""
    figures = trial_figures(run.get("samples") or []) if run is not None else None
    campaign = trial_extra(run) if run is not None else {}
    settled = SettledTrial(
        state=TrialState.COMPLETE,
        metrics={
            **(figures.metrics if figures is not None else {}),
            **trial_quality(campaign, trial_model(params, base)),
        },
    )
    if figures is not None:
        settled.repetitions, settled.measured_s = figures.repetitions, figures.measured_s
        settled.samples = list(figures.repetitions[spec.objective])
    run_reason = str(run.get("failure_reason") or "") if run is not None else ""
    if end.status != "finished" or run is None:
        tail = str(run.get("server_log_tail") or "") if run is not None else end.log_tail
        settled.log_tail = tail[-MAX_LOG_TAIL_CHARS:]
    if run is not None and (run.get("extra") or {}).get("interrupted"):
        # Ctrl-C on the rig: the pipeline kept the samples; the CLI's driver stops the campaign.
        settled.state, settled.failure_kind, settled.failure_reason = (
            TrialState.ABORTED,
            FailureKind.INTERRUPTED,
            run_reason,
        )
    elif campaign.get("pruned_after") and settled.samples and role == TrialRole.SEARCH:
        # The rig stopped it after its first repetitions (hooks.py): its value is theirs.
        settled.pruned, settled.value, settled.failure_reason = True, statistics.fmean(settled.samples), run_reason
    elif end.status != "finished" or run is None:
        settled.state = TrialState.ABORTED if end.status == "aborted" else TrialState.FAILED
        settled.failure_kind = end.failure_kind or _KIND_BY_STATUS.get(end.status, FailureKind.RUN_FAILED)
        settled.failure_reason = end.failure_reason
    elif (value := settled.metrics.get(spec.objective)) is None:
        settled.state, settled.failure_kind = TrialState.FAILED, FailureKind.NO_MEASUREMENT
        settled.failure_reason = f"the run measured no {spec.objective}"
    else:
        settled.value = float(value)
        broken = [c.text() for c in spec.constraints if c.holds(settled.metrics) is False]
        if broken:
            settled.state, settled.failure_reason = TrialState.INFEASIBLE, "breaks " + "; ".join(broken)
    return settled

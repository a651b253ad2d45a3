"""One trial on the rig: the base config with the trial's parameters, through the
runner's own pipeline (``run_job``: server start, fingerprint, repetitions,
posting the run), turned into a TrialResult.

A trial whose server will not start (out of memory, a rejected flag, a model
that will not load, a start-up time-out) is a failed trial with llama-server's
own words and log tail; a run that fails mid-way keeps its samples (the
pipeline posts it as failed) and the trial records why. What the trial stores is
settled by the one rule the service uses too (settle.py).
"""

from __future__ import annotations

import copy
import json
import tempfile
import time
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from runners.campaign.hooks import run_trial_job
from runners.campaign.search import MedianPrune, TrialResult
from runners.campaign.settle import TrialEnd, trial_settle
from runners.campaign.spec import CampaignSpec
from runners.campaign.states import TrialRole
from runners.config import ConfigError
from runners.delivery.status_schema import FailureKind
from runners.harness.server import ServerError


def trial_config(
    base: Mapping[str, Any],
    params: Mapping[str, Any],
    *,
    repetitions: int,
    trial: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Return the rig config for one trial: ``base`` with ``params`` set in its [server]
    and ``trial`` as its [trial] (what the rig does beyond the run: hooks.py).

    ``tensor_overrides`` is one pattern per value ('' for none); a draft-model
    spec type without a draft model drafts with the model itself, and a trial
    without a draft spec type loads no draft model."""
    config = copy.deepcopy(dict(base))
    server = config.setdefault("server", {})
    for name, value in params.items():
        if name == "tensor_overrides":
            server["tensor_overrides"] = [value] if value else []
        else:
            server[name] = value
    spec_type = str(server.get("spec_type") or "none")
    if spec_type.startswith("draft-"):
        server.setdefault("draft_model", server.get("model", ""))
        if not server.get("draft_model"):
            server["draft_model"] = server.get("model", "")
    else:
        server.pop("draft_model", None)
        if not spec_type.startswith("ngram"):
            server.pop("draft_n_max", None)
    config.setdefault("workload", {})["repetitions"] = repetitions
    if trial is not None:
        config["trial"] = dict(trial)
    return config


def trial_asks(
    spec: CampaignSpec, base: Mapping[str, Any], *, prune_history: list[list[float]] | None = None
) -> dict[str, Any]:
    """Return the [trial] block of a campaign's trial: the perplexity of every model
    file of the campaign, and the history to prune against (decode t/s objectives
    only: the rig checks each repetition's decode t/s). None/[] history: no pruning."""
    models = spec.space.get("model") or [str((base.get("server") or {}).get("model") or "")]
    return {
        "direction": spec.direction,
        "perplexity_models": [str(m) for m in models if m],
        "prune_history": prune_history if prune_history and spec.objective == "decode_tokens_per_s" else [],
    }


def measure_trial(
    base: Mapping[str, Any],
    spec: CampaignSpec,
    number: int,
    params: dict[str, Any],
    *,
    prune: MedianPrune | None = None,
    role: str = TrialRole.SEARCH,
) -> TrialResult:
    """Measure one trial with the rig's pipeline and return it (never raises for
    a trial that failed; a bad base config raises ConfigError). With ``prune``,
    its history goes to the rig in [trial] (hooks.py): a trial clearly worse than
    the median after a repetition stops there and is kept, pruned, with the
    repetitions measured (the run is posted aborted with them). A confirmation
    (``role``) measures ``spec.confirm_repetitions`` repetitions and is never pruned."""
    repetitions = spec.confirm_repetitions if role == TrialRole.CONFIRMATION else spec.repetitions
    asks = trial_asks(spec, base, prune_history=prune.history if prune is not None else None)
    config = trial_config(base, params, repetitions=repetitions, trial=asks)
    config["run_uuid"] = str(uuid.uuid4())
    config["notes"] = (str(config.get("notes") or "") + f" campaign {spec.name!r} {role} trial {number}").strip()
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="rigboard-trial-") as tmp:
        config["output_path"] = str(Path(tmp) / "run.json")
        try:
            result = run_trial_job(config)
        except ServerError as exc:
            end = TrialEnd("failed", failure_kind=exc.kind, failure_reason=exc.reason, log_tail=exc.log_tail)
            return _trial(spec, base, number, params, role, None, end, duration_s=time.monotonic() - started)
        except ConfigError as exc:
            if exc.field.startswith("server."):
                # A value of the space the config refuses: this point fails, the campaign goes on.
                end = TrialEnd("failed", failure_kind=FailureKind.BAD_CONFIG, failure_reason=str(exc))
                return _trial(spec, base, number, params, role, None, end, duration_s=None)
            raise
        payload = json.loads(Path(config["output_path"]).read_text())
    end = TrialEnd(result.status, failure_kind=result.failure_kind, failure_reason=str(result.failure_reason))
    trial = _trial(spec, base, number, params, role, payload, end, duration_s=time.monotonic() - started)
    trial.run_uuid = str(result.run_uuid)
    return trial


def _trial(
    spec: CampaignSpec,
    base: Mapping[str, Any],
    number: int,
    params: dict[str, Any],
    role: str,
    payload: dict[str, Any] | None,
    end: TrialEnd,
    *,
    duration_s: float | None,
) -> TrialResult:
    """Return the TrialResult of a trial settled by the one rule (settle.py)."""
    settled = trial_settle(spec, base=base, params=params, role=role, run=payload, end=end)
    return TrialResult(
        number=number,
        params=params,
        state=settled.state,
        value=settled.value,
        metrics=settled.metrics,
        failure_kind=settled.failure_kind,
        failure_reason=settled.failure_reason,
        log_tail=settled.log_tail,
        duration_s=duration_s,
        measured_s=settled.measured_s,
        samples=settled.samples,
        repetitions=settled.repetitions,
        pruned=settled.pruned,
        role=role,
        run=payload,
    )

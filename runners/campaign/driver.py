"""``python -m runners campaign --config rig.toml --campaign campaign.toml``.

Opens the campaign on the service (``POST /api/campaigns/`` with the rig's
token), measures trials with the rig's pipeline (each posted as a run, as
``python -m runners run`` posts one), and records each trial as it finishes
(``POST /api/campaigns/<id>/trials/``). Without a service URL it measures and
prints only. Ctrl-C stops the campaign: the trial in hand is posted as aborted
with its samples (the pipeline does that) and the campaign is closed cancelled.

``--output FILE`` also writes what was (or would have been) posted, as one JSON
document: the campaign as opened, its trial records and the run document of
each trial (``run --output``'s shape), with the campaign's start, end and
status (``CAMPAIGN_FORMAT``). ``manage.py import_campaign`` stores such a file.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import logging
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import requests

from runners.campaign.confirm import confirmation_text
from runners.campaign.schema import trial_problems
from runners.campaign.search import MedianPrune, TrialResult, best_feasible, confirmation_target, run_search
from runners.campaign.spec import CampaignSpec
from runners.campaign.states import CampaignOrigin, TrialRole, TrialState
from runners.campaign.trial import measure_trial
from runners.config import ConfigError, RigConfig, read_spec
from runners.files import write_atomically
from runners.harness.fingerprint import server_flags
from runners.harness.server import ServerError, resolve_binary

CAMPAIGN_FORMAT = "rigboard-campaign/1"
logger = logging.getLogger(__name__)


def campaign_body(spec: CampaignSpec, base: Mapping[str, Any], rig: str) -> dict[str, Any]:
    """Return what ``POST /api/campaigns/`` takes to open ``spec`` on ``rig``."""
    return {**spec.as_dict(), "rig": rig, "base_config": dict(base), "origin": CampaignOrigin.TERMINAL}


class CampaignService:
    """The service's campaign endpoints, with the rig's token."""

    def __init__(self, url: str, token: str, *, timeout_s: float = 30.0) -> None:
        self.url = url.rstrip("/")
        self.timeout_s = timeout_s
        self.session = requests.Session()
        self.session.headers.update({"Authorization": f"Token {token}", "Accept": "application/json"})

    def open(self, spec: CampaignSpec, base: Mapping[str, Any], rig: str) -> dict[str, Any]:
        """Create the campaign; return the service's answer ({id, ...}). Raise ConfigError on a 400."""
        body = campaign_body(spec, base, rig)
        resp = self.session.post(f"{self.url}/api/campaigns/", json=body, timeout=self.timeout_s)
        if resp.status_code == 400:
            errors = resp.json().get("errors", {})
            field = next(iter(errors), "campaign")
            raise ConfigError(f"campaign.{field}", "; ".join(map(str, errors.get(field, []))) or resp.text)
        resp.raise_for_status()
        return dict(resp.json())

    def trial(self, campaign_id: int, trial: TrialResult) -> None:
        payload = trial.payload()
        problems = trial_problems(payload)
        if problems:
            # Posted all the same: the service's answer decides; this says why before the round trip does.
            logger.warning("the service will refuse trial %s: %s", trial.number, problems)
        resp = self.session.post(
            f"{self.url}/api/campaigns/{campaign_id}/trials/", json=payload, timeout=self.timeout_s
        )
        resp.raise_for_status()

    def close(self, campaign_id: int, status: str, reason: str = "") -> None:
        resp = self.session.post(
            f"{self.url}/api/campaigns/{campaign_id}/finish/",
            json={"status": status, "reason": reason},
            timeout=self.timeout_s,
        )
        resp.raise_for_status()


def run_campaign(
    rig_spec: dict[str, Any], campaign_spec: Mapping[str, Any], *, output_path: str = ""
) -> tuple[int | None, list[TrialResult]]:
    """Run the campaign from the terminal; return (the service's campaign id or None, the trials,
    the confirmation last when there is one). Raise ConfigError (exit 2) before anything
    starts for a bad definition, or a parameter this rig's llama-server does not accept.
    With ``output_path``, the campaign is also written there (module doc), even when it stops early."""
    spec = CampaignSpec.from_mapping(campaign_spec)
    rig = RigConfig.from_mapping(rig_spec)  # a bad rig config fails before anything starts
    if rig.server is None:
        raise ConfigError("server", "a campaign launches llama-server itself: give [server]")
    check_server_flags(spec, rig.server.binary, rig.cache_dir)
    base = {k: v for k, v in rig_spec.items() if k not in ("service", "run_uuid", "output_path")}
    service = CampaignService(rig.service.url, rig.service.token) if rig.service.url else None
    campaign_id = int(service.open(spec, base, rig.service.rig)["id"]) if service else None

    def measure(number: int, params: dict[str, Any], prune: MedianPrune) -> TrialResult:
        return measure_trial(rig_spec, spec, number, params, prune=prune)

    def report(trial: TrialResult) -> None:
        value = f"{trial.value:.2f}" if trial.value is not None else trial.failure_kind
        label = "confirmation" if trial.role == TrialRole.CONFIRMATION else "trial"
        print(f"{label} {trial.number}: {trial.state} {value} {json.dumps(trial.params)}", flush=True)
        if service is not None and campaign_id is not None:
            service.trial(campaign_id, trial)
        if trial.failure_kind == "interrupted":
            raise KeyboardInterrupt  # Ctrl-C reached the pipeline, which kept the samples: stop here

    status, reason = "finished", ""
    started_at = _now()
    trials: list[TrialResult] = []
    try:
        trials = run_search(spec, measure, on_trial=report, into=trials)
        best = confirmation_target(spec.direction, trials) if spec.confirm_repetitions else None
        if best is not None:
            confirmation = measure_trial(
                rig_spec, spec, len(trials) + 1, dict(best.params), role=TrialRole.CONFIRMATION
            )
            trials.append(confirmation)
            report(confirmation)
    except KeyboardInterrupt:
        status, reason = "cancelled", "interrupted on the rig"
    except Exception as exc:
        status, reason = "failed", f"{type(exc).__name__}: {exc}"
        raise
    finally:
        if output_path:
            recorded = {
                "format": CAMPAIGN_FORMAT,
                "campaign": campaign_body(spec, base, rig.service.rig),
                "status": status,
                "status_reason": reason,
                "started_at": started_at,
                "finished_at": _now(),
                "trials": [t.payload() for t in trials],
                "runs": [t.run for t in trials if t.run is not None],
            }
            _write_json(Path(output_path).expanduser(), recorded)
        if service is not None and campaign_id is not None:
            service.close(campaign_id, status, reason)
    return campaign_id, trials


def check_server_flags(spec: CampaignSpec, binary: str, cache_dir: str) -> None:
    """Raise ConfigError naming ``space.<parameter>`` when this rig's llama-server
    (``binary --help``) does not list the parameter's flag; nothing when it lists none."""
    try:
        path = resolve_binary(binary)
    except ServerError:
        return  # the first trial says so, with llama-server's own words
    flags = server_flags(path, cache_dir=Path(cache_dir).expanduser())
    if flags:
        spec.check_flags(flags, where=f"this rig's llama-server ({path})")


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


def _write_json(path: Path, data: Mapping[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(path, json.dumps(data, indent=1) + "\n")


def add_parser(sub: Any) -> None:
    cmd = sub.add_parser("campaign", help="search the configuration space of llama-server on this rig")
    cmd.add_argument("--config", required=True, help="rig config, TOML or .json (its [server] is the base)")
    cmd.add_argument("--campaign", required=True, help="campaign definition, TOML or .json")
    cmd.add_argument("--output", default="", help="also write the campaign, its trials and their runs here (JSON)")
    cmd.add_argument("--no-post", action="store_true", help="measure and print; post nothing")


def main(args: argparse.Namespace) -> int:
    rig_spec = read_spec(args.config)
    if args.no_post:
        rig_spec.setdefault("service", {})["url"] = ""
    campaign_id, trials = run_campaign(rig_spec, read_spec(args.campaign), output_path=args.output)
    searched = [t for t in trials if t.role == TrialRole.SEARCH]
    done = [t for t in searched if t.state == TrialState.COMPLETE and t.value is not None]
    print(f"\ncampaign {campaign_id or '(not posted)'}: {len(searched)} trials, {len(done)} complete")
    spec = CampaignSpec.from_mapping(read_spec(args.campaign))
    best = best_feasible(spec.direction, searched)
    if best is not None:
        print(f"best: {best.value:.2f} with {json.dumps(best.params)}")
    elif done:
        print("no recommendation: every measured trial's answers failed the output check")
    confirmation = next((t for t in trials if t.role == TrialRole.CONFIRMATION), None)
    if confirmation is not None:
        print(confirmation_text(spec.as_dict(), trials))
    return 0 if trials else 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main(argparse.Namespace()))
